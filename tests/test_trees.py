"""Trees and the logistic loss through the algorithms, the model file and the exports.

* a two-leaf tree of the error gain is the stump, bit for bit (AdaBoost, SmoothBoost);
* tree models save, load and predict the same; a damaged tree is refused, naming it;
* ``export --format lightgbm`` is read by LightGBM, whose raw scores are ours (stumps and trees,
  binary and multiclass, missing values in training and prediction);
* ``predict --proba`` of the logistic models, and its refusal elsewhere;
* the logistic boosters learn: on generated data they come within a few points of LightGBM's
  defaults at the same rounds and leaves.

The same tree on 1-4 ranks, uneven and empty blocks, a dedicated coordinator and both histogram
exchanges: the registry-driven tests/test_conformance.py (every ``--weak-learner tree`` option).
"""
import json
import math

import h5py
import numpy as np
import pytest

from mpiboost import cli
from mpiboost.data import format as fmt
from mpiboost.errors import InputError
from mpiboost.model import Model


def _run(*args) -> int:
    return cli.main([str(a) for a in args])


def _data(path, n, seed, classes=2, missing=0.1):
    """Interactions and missing values: a target no stump expresses."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    if classes == 2:
        y = np.where((X[:, 0] > 0) ^ (X[:, 1] > 0.3), 1, -1)
        flip = rng.random(n) < 0.05
        y[flip] = -y[flip]
    else:
        y = (np.digitize(X[:, 0] + 0.5 * X[:, 1] * X[:, 2], [-0.8, 0.0, 0.8])).astype(np.int32)
    X[rng.random(X.shape) < missing] = np.nan
    fmt.write_dataset(path, X, y)
    return X, y


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("trees")
    out = {}
    for name, classes in (("bin", 2), ("multi", 4)):
        _data(d / f"{name}.h5", 3000, 1, classes)
        _data(d / f"{name}-test.h5", 2000, 2, classes)
        out[name] = (d / f"{name}.h5", d / f"{name}-test.h5")
    return d, out


def _model(d, name, data, *args):
    path = d / f"{name}.h5"
    assert _run("train", "--data", data, "--model", path, "--quiet", *args) == 0
    return Model.load(path)


@pytest.mark.parametrize("algo", ["adaboost", "smoothboost"])
def test_two_leaf_error_tree_is_the_stump(files, algo):
    d, f = files
    same = ("--gamma", 0.02) if algo == "smoothboost" else ()  # its default gamma differs with trees
    stump = _model(d, f"{algo}-stump", f["bin"][0], "--algo", algo, "--rounds", 25, *same, "--weak-learner", "stump")
    tree = _model(d, f"{algo}-tree2", f["bin"][0], "--algo", algo, "--rounds", 25, *same, "--weak-learner", "tree",
                  "--max-leaves", 2, "--split-gain", "error", "--min-data-in-leaf", 0, "--min-child-weight", 0)
    for name in ("feature", "bin", "left", "right", "missing_left", "coef", "round"):
        np.testing.assert_array_equal(getattr(tree, name), getattr(stump, name), err_msg=name)
    # and a larger tree is not a stump: it fits the interaction
    big = _model(d, f"{algo}-tree", f["bin"][0], "--algo", algo, "--rounds", 25, "--weak-learner", "tree")
    assert big.has_trees and max(t.n_leaves for t in big.trees) > 2


def test_legacy_weak_learner_spellings(files):
    d, f = files
    a = _model(d, "legacy", f["bin"][0], "--algo", "adaboost", "--rounds", 5, "--weak-learner", "sample",
               "--samples", 400)
    b = _model(d, "new", f["bin"][0], "--algo", "adaboost", "--rounds", 5, "--weak-learner", "stump", "--search",
               "sample", "--samples", 400)
    assert a.params["weak_learner"] == "stump" and a.params["search"] == "sample"
    assert a.to_json().replace("legacy", "new") == b.to_json().replace("legacy", "new")
    assert _run("train", "--algo", "adaboost", "--data", f["bin"][0], "--weak-learner", "sample", "--search",
                "histogram", "--model", d / "x.h5", "--quiet") == 2


CASES = {
    "adaboost-tree": ("bin", ["--algo", "adaboost", "--weak-learner", "tree", "--max-leaves", 6]),
    "logistic-tree": ("bin", ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree"]),
    "logistic-stump": ("bin", ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "stump"]),
    "smoothboost-tree": ("bin", ["--algo", "smoothboost", "--weak-learner", "tree", "--max-depth", 3]),
    "adaboost-stump": ("bin", ["--algo", "adaboost", "--weak-learner", "stump"]),
    "softmax": ("multi", ["--algo", "softmax", "--max-leaves", 8]),
    "softmax-stump": ("multi", ["--algo", "softmax", "--weak-learner", "stump"]),
    "samme": ("multi", ["--algo", "samme", "--weak-learner", "stump"]),
    "samme-tree": ("multi", ["--algo", "samme", "--weak-learner", "tree", "--max-leaves", 5]),
    "samme-tree-sample": ("multi", ["--algo", "samme", "--weak-learner", "tree", "--search", "sample",
                                    "--samples", 500]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_model_file_round_trip_and_lightgbm_export(files, case, tmp_path):
    import lightgbm as lgb
    d, f = files
    which, args = CASES[case]
    train, test = f[which]
    model = _model(d, case, train, *args, "--rounds", 12)
    again = Model.load(d / f"{case}.h5")
    assert again.to_json() == model.to_json()
    X = fmt.read_arrays(test)["X"].astype(np.float64)
    cols = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    ours = model.decision_binned(cols)
    # the first rounds' model predicts what its members add up to
    half = model.truncated(6)
    assert half.n_stumps == 6 * (1 if model.has_trees or model.output == "sign" else 1)
    out = tmp_path / "m.txt"
    assert _run("export", "--model", d / f"{case}.h5", "--format", "lightgbm", "--out", out) == 0
    booster = lgb.Booster(model_file=str(out))
    theirs = booster.predict(X, raw_score=True)
    assert np.isnan(X).any()
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-12)
    # LightGBM's probabilities from the exported objective, against a few lines of numpy on our scores
    probs = booster.predict(X)
    if ours.ndim == 1:
        # the logistic loss's scores are log-odds; AdaBoost's exponential loss (a weighted vote) estimates half
        # of them; a majority vote's count goes through the plain sigmoid (it is no probability)
        half = model.link != "logistic" and model.vote == "weighted"
        twin = 1.0 / (1.0 + np.exp(-(2.0 if half else 1.0) * ours))
        np.testing.assert_allclose(probs, twin, rtol=0, atol=1e-12)
    else:
        e = np.exp(ours - ours.max(axis=1, keepdims=True))
        twin = e / e.sum(axis=1, keepdims=True)
        np.testing.assert_allclose(probs, twin, rtol=0, atol=1e-12)
    if model.link is not None:  # the model's own probabilities are the same numbers
        mine = model.proba_binned(cols)
        np.testing.assert_allclose(mine[:, 1] if ours.ndim == 1 else mine, twin, rtol=0, atol=1e-12)
    doc = json.loads(model.to_json())
    if model.has_trees:
        assert len(doc["trees"]) == model.n_stumps and all("tree" in e for e in doc["ensemble"])
        _exported_numbers_round_trip(model, out.read_text())


def _exported_numbers_round_trip(model, text: str) -> None:
    """Every threshold and leaf value the LightGBM file holds parses back to our double, bit for bit (a format
    of 15 significant digits would change most of them in the last bits)."""
    blocks = text.split("\nTree=")[1:]
    coef = model.vote_coefficients()
    K = model.n_classes if model.output == "argmax" else 1
    exact = 0
    for index, block in enumerate(blocks):
        t, k = divmod(index, K)
        tree = model.trees[int(model.tree[t])]
        fields = dict(line.split("=", 1) for line in block.splitlines()[1:] if "=" in line)
        values = [float(v) for v in fields["leaf_value"].split()]
        want = [float(coef[t]) * float(tree.value[i, k]) for i in range(tree.n_nodes) if tree.feature[i] < 0]
        assert [v.hex() for v in values] == [w.hex() for w in want]
        if "threshold" in fields:
            internal = [i for i in range(tree.n_nodes) if tree.feature[i] >= 0]
            got = [float(v) for v in fields["threshold"].split()]
            ours = [model.bins.threshold(int(tree.feature[i]), int(tree.bin[i])) for i in internal]
            ours = [min(x, 1.7976931348623157e308) for x in ours]  # the last bin's +inf, as the largest double
            assert [v.hex() for v in got] == [w.hex() for w in ours]
            exact += sum(len(repr(w)) > 17 for w in want + ours)
    assert exact > 0  # some numbers need all 17 digits: the check can tell a short format from the exact one


def test_damaged_trees_are_refused(files, tmp_path):
    d, f = files
    _model(d, "damage", f["bin"][0], "--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree",
           "--rounds", 3)
    src = d / "damage.h5"
    import shutil

    def damaged(name, edit):
        p = tmp_path / f"{name}.h5"
        shutil.copyfile(src, p)
        with h5py.File(p, "r+") as h:
            edit(h)
        return p

    def loop(h):  # a child pointing back at the root: a walk would never end
        a = h["trees/left"][()]
        a[0] = 0
        del h["trees/left"]
        h["trees/left"] = a

    def bad_feature(h):
        a = h["trees/feature"][()]
        a[0] = 99
        del h["trees/feature"]
        h["trees/feature"] = a

    def bad_value(h):
        a = h["trees/value"][()]
        del h["trees/value"]
        h["trees/value"] = a[:-1]

    def nan_value(h):
        a = h["trees/value"][()]
        a[-1] = np.nan
        del h["trees/value"]
        h["trees/value"] = a

    def stat(name, fn):
        def edit(h):
            a = fn(h[f"trees/{name}"][()])
            del h[f"trees/{name}"]
            h[f"trees/{name}"] = a
        return edit

    def at0(v):
        def fn(a):
            a = a.astype(np.float64) if np.isnan(v) else a.copy()
            a[0] = v
            return a
        return fn

    for name, edit, words in [("loop", loop, "not a binary tree"), ("feature", bad_feature, "feature outside"),
                              ("value", bad_value, "trees/value"), ("nan", nan_value, "not finite"),
                              ("gain-nan", stat("gain", at0(np.nan)), "trees/gain must hold finite"),
                              ("gain-short", stat("gain", lambda a: a[:-1]), "trees/gain"),
                              ("count-negative", stat("count", at0(-1)), "trees/count"),
                              ("count-float", stat("count", at0(np.nan)), "trees/count"),
                              ("weight-negative", stat("weight", at0(-1.0)), "trees/weight must hold finite non-neg")]:
        with pytest.raises(InputError, match=words):
            Model.load(damaged(name, edit))
    # a format-3 model (no node statistics) still loads: zeros
    old = damaged("format3", lambda h: [h.__delitem__(f"trees/{n}") for n in ("gain", "count", "weight")])
    m = Model.load(old)
    assert all(not t.count.any() and not t.gain.any() for t in m.trees)
    new = Model.load(src)
    assert all(t.count[0] > 0 and t.weight[0] > 0 for t in new.trees)
    assert all((t.count[t.feature >= 0] == t.count[t.left[t.feature >= 0]] + t.count[t.right[t.feature >= 0]]).all()
               for t in new.trees)  # an internal node covers its children's rows


def test_predict_proba(files, tmp_path, capsys):
    d, f = files
    train, test = f["bin"]
    _model(d, "proba", train, "--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree", "--rounds", 30)
    out = tmp_path / "p.csv"
    assert _run("predict", "--model", d / "proba.h5", "--data", train, "--proba", "--out", out) == 0
    p = np.loadtxt(out, delimiter=",", skiprows=1)
    assert p.shape == (3000, 2) and np.allclose(p.sum(axis=1), 1.0)
    y = fmt.read_arrays(train)["y"]
    # calibrated: the mean probability of the positive class is near its frequency
    assert abs(p[:, 1].mean() - np.mean(y == 1)) < 0.02
    m = _model(d, "exp", train, "--algo", "adaboost", "--rounds", 5)  # a vote: sigmoid(2 F), not calibrated
    assert _run("predict", "--model", d / "exp.h5", "--data", test, "--proba", "--out", tmp_path / "q.csv") == 0
    q = np.loadtxt(tmp_path / "q.csv", delimiter=",", skiprows=1)
    F = m.decision_function(fmt.read_arrays(test)["X"])
    np.testing.assert_allclose(q[:, 1], 1 / (1 + np.exp(-2 * F)), rtol=1e-9)
    _model(d, "sm", f["multi"][0], "--algo", "softmax", "--rounds", 10)
    assert _run("predict", "--model", d / "sm.h5", "--data", f["multi"][1], "--proba", "--out", out) == 0
    p = np.loadtxt(out, delimiter=",", skiprows=1)
    assert p.shape == (2000, 4) and np.allclose(p.sum(axis=1), 1.0)


def _error(model, test):
    a = fmt.read_arrays(test)
    X = a["X"]
    return float(np.mean(model.predict_raw(X) != a["y"]))


def test_logistic_boosters_come_near_lightgbm(files):
    import lightgbm as lgb
    d, f = files
    for which, args, objective in (("bin", ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree"],
                                    "binary"),
                                   ("multi", ["--algo", "softmax"], "multiclass")):
        train, test = f[which]
        ours = _error(_model(d, f"near-{which}", train, *args, "--rounds", 100), test)
        a, b = fmt.read_arrays(train), fmt.read_arrays(test)
        y = (a["y"] > 0).astype(int) if which == "bin" else a["y"]
        params = {"objective": objective, "verbose": -1, "num_threads": 1, "deterministic": True}
        if which == "multi":
            params["num_class"] = 4
        booster = lgb.train(params, lgb.Dataset(a["X"], y), num_boost_round=100)
        pred = booster.predict(b["X"])
        theirs_pred = np.where(pred >= 0.5, 1, -1) if which == "bin" else pred.argmax(axis=1)
        theirs = float(np.mean(theirs_pred != b["y"]))
        assert ours <= theirs + 0.02, (which, ours, theirs)


def _synth(d, *args):
    assert _run("synth", *args) == 0


def test_transfer_and_multitask_take_trees(tmp_path):
    """The transfer family's candidates and IS multi-task's steps as trees: trained, saved, scored."""
    _synth(tmp_path, "transfer", "--n", 400, "--target-n", 40, "--sources", 2, "--task-seed", 1, "--seed", 1,
           "--out", tmp_path / "tr.h5", "--split-domains")
    _synth(tmp_path, "transfer", "--n", 3000, "--sources", 0, "--task-seed", 1, "--seed", 2, "--out",
           tmp_path / "tr-test.h5")
    for algo in ("msdtra", "mstra", "tradaboost", "dtradaboost"):
        model = tmp_path / f"{algo}.h5"
        assert _run("train", "--algo", algo, "--target", tmp_path / "tr-target.h5", "--source",
                    tmp_path / "tr-source1.h5", tmp_path / "tr-source2.h5", "--rounds", 10, "--weak-learner", "tree",
                    "--max-leaves", 4, "--min-data-in-leaf", 5, "--model", model, "--quiet") == 0
        m = Model.load(model)
        assert m.has_trees and m.n_stumps >= 10
        a = fmt.read_arrays(tmp_path / "tr-test.h5")
        assert np.mean(m.predict_raw(a["X"]) != a["y"]) < 0.4, algo
    _synth(tmp_path, "multitask", "--dataset", 1, "--n", 300, "--task-seed", 1, "--seed", 1, "--out",
           tmp_path / "mt.h5")
    _synth(tmp_path, "multitask", "--dataset", 1, "--n", 300, "--task-seed", 1, "--seed", 2, "--out",
           tmp_path / "mt-test.h5")
    for extra in ([], ["--start", "pooled"]):
        model = tmp_path / "mt.model.h5"
        assert _run("train", "--algo", "is-multitask", "--data", tmp_path / "mt.h5", "--lambda", 0.1, "--rounds", 30,
                    "--weak-learner", "tree", "--max-leaves", 4, *extra, "--model", model, "--quiet") == 0
        m = Model.load(model)
        assert m.has_trees and m.vote == "task"
        again = Model.load(model)
        assert again.to_json() == m.to_json()
        a = fmt.read_arrays(tmp_path / "mt-test.h5")
        cols = np.empty((a["X"].shape[1], a["X"].shape[0]), dtype=np.uint8)
        m.bins.transform(a["X"], out=cols.T)
        score = m.decision_binned(cols, task=a["domain"])
        assert np.mean(np.where(score >= 0, 1, -1) != a["y"]) < 0.4


def _softmax_objective(phi, temperature=0.1):
    """MultiBoost's objective G = tau log sum_l exp(F_l / tau), tau = temperature max F."""
    phi = np.asarray(phi)
    tau = temperature * phi.max()
    return phi.max() + tau * np.log(np.exp((phi - phi.max()) / tau).sum())


def test_multiboost_and_fedmultiboost_take_trees_and_the_logistic_loss(tmp_path, capsys):
    """Q-ensembles of trees and MultiBoost's logistic Phi: trained, saved, scored as in training; the exact
    line search lowers the objective every round; the logistic model's probabilities are calibrated."""
    _synth(tmp_path, "multisource", "--n", 4000, "--seed", 1, "--out", tmp_path / "ms.h5")
    _synth(tmp_path, "multisource", "--n", 4000, "--seed", 2, "--out", tmp_path / "ms-test.h5")
    a, b = fmt.read_arrays(tmp_path / "ms.h5"), fmt.read_arrays(tmp_path / "ms-test.h5")

    def worst(m):
        wrong = m.predict_raw(b["X"]) != b["y"]
        return max(wrong[b["domain"] == k].mean() for k in np.unique(b["domain"]))

    errors = {}
    for name, args in (("stump", ["--algo", "multiboost", "--weak-learner", "stump"]),
                       ("tree", ["--algo", "multiboost", "--weak-learner", "tree"]),
                       ("tree-logistic", ["--algo", "multiboost", "--weak-learner", "tree", "--loss", "logistic"]),
                       ("stump-logistic", ["--algo", "multiboost", "--weak-learner", "stump", "--loss", "logistic"]),
                       ("tree-paper", ["--algo", "multiboost", "--weak-learner", "tree", "--gates", "paper",
                                       "--max-leaves", 8]),
                       ("fed-tree", ["--algo", "fedmultiboost", "--weak-learner", "tree", "--max-leaves", 8])):
        path, metrics = tmp_path / f"{name}.h5", tmp_path / f"{name}.jsonl"
        assert _run("train", "--data", tmp_path / "ms.h5", "--model", path, "--metrics", metrics, "--rounds", 25,
                    "--quiet", *args) == 0
        m = Model.load(path)
        assert m.to_json() == Model.load(path).to_json()
        assert m.has_trees == ("tree" in name) and m.vote == "q-weighted"
        rounds = [json.loads(line) for line in open(metrics)][:-1]
        # the model scores the training rows as training did (the last round's training error)
        train_error = float(np.mean(m.predict_raw(a["X"]) != a["y"]))
        assert train_error == pytest.approx(rounds[-1]["train_error"], abs=1e-12), name
        if name != "fed-tree":  # FedMultiBoost takes AdaBoost's step from sampled clients, not the line search
            G = [_softmax_objective(r["phi"]) for r in rounds]
            assert all(g1 <= g0 * (1 + 1e-12) for g0, g1 in zip(G, G[1:])), (name, G)
        errors[name] = worst(m)
        if m.has_trees:
            assert _run("export", "--model", path, "--format", "lightgbm", "--out", tmp_path / "x.txt") == 2
            assert "q-weighted" in capsys.readouterr().err
            assert _run("export", "--model", path, "--format", "json", "--out", tmp_path / f"{name}.json") == 0
            assert len(json.load(open(tmp_path / f"{name}.json"))["trees"]) == m.n_stumps
    # the generator's domains need interactions within a domain: trees beat stumps at equal rounds
    assert errors["tree"] < errors["stump"] and errors["tree-logistic"] < errors["stump"], errors
    assert max(errors.values()) < 0.1, errors
    # calibrated probabilities of the logistic Phi: the mean probability of +1 is the rate of +1
    assert _run("predict", "--model", tmp_path / "tree-logistic.h5", "--data", tmp_path / "ms-test.h5", "--proba",
                "--out", tmp_path / "p.csv") == 0
    p = np.loadtxt(tmp_path / "p.csv", delimiter=",", skiprows=1)
    assert np.allclose(p.sum(axis=1), 1.0)
    assert abs(p[:, 1].mean() - np.mean(b["y"] > 0)) < 0.03
    assert _run("train", "--algo", "multiboost", "--loss", "logistic", "--step", "lemma1", "--rounds", 5, "--data",
                tmp_path / "ms.h5", "--model", tmp_path / "x.h5", "--quiet") == 2
    assert "--step lemma1" in capsys.readouterr().err


def test_multiboost_shrinks_its_tree_steps_by_the_rounds(tmp_path):
    """Trees: every line-search step times nu, by default 1/sqrt(T); stumps keep the paper's full step."""
    _synth(tmp_path, "multisource", "--n", 2000, "--seed", 1, "--out", tmp_path / "ms.h5")
    coef = {}
    for name, extra, rounds in (("default", [], 25), ("full", ["--learning-rate", 1], 1), ("half", ["--learning-rate", 0.5], 1),
                                ("stump", ["--weak-learner", "stump"], 25)):
        path = tmp_path / f"{name}.h5"
        wl = [] if name == "stump" else ["--weak-learner", "tree"]
        assert _run("train", "--algo", "multiboost", *wl, "--loss", "logistic", "--data", tmp_path / "ms.h5",
                    "--model", path, "--rounds", rounds, "--quiet", *extra) == 0
        m = Model.load(path)
        coef[name] = (m.params["learning_rate"], m.coef)
    assert coef["default"][0] == pytest.approx(1 / 5) and coef["stump"][0] == 1.0
    # the same first tree and line search: the step is scaled, nothing else
    assert coef["half"][1][-1] == pytest.approx(0.5 * coef["full"][1][-1], rel=1e-12)


def test_agnostic_batch_takes_class_trees(tmp_path):
    """agnostic-batch with class trees (both relabellings): saved, scored as in training, and far more accurate
    than its class stumps on classes that need several splits."""
    _synth(tmp_path, "multiclass", "--n", 2400, "--classes", 6, "--seed", 1, "--out", tmp_path / "mc.h5")
    _synth(tmp_path, "multiclass", "--n", 2000, "--classes", 6, "--seed", 2, "--out", tmp_path / "mc-test.h5")
    a, b = fmt.read_arrays(tmp_path / "mc.h5"), fmt.read_arrays(tmp_path / "mc-test.h5")
    errors = {}
    for name, args in (("stump", ["--weak-learner", "stump"]), ("tree", []),  # trees: the default
                       ("tree-random", ["--weak-learner", "tree", "--relabel", "random", "--samples", 1500])):
        path, metrics = tmp_path / f"{name}.h5", tmp_path / f"{name}.jsonl"
        assert _run("train", "--algo", "agnostic-batch", "--data", tmp_path / "mc.h5", "--rounds", 40, "--model",
                    path, "--metrics", metrics, "--quiet", *args) == 0
        m = Model.load(path)
        assert m.has_trees == (name != "stump")
        last = [json.loads(line) for line in open(metrics)][-2]
        assert float(np.mean(m.predict_raw(a["X"]) != a["y"])) == pytest.approx(last["train_error"], abs=1e-12)
        errors[name] = float(np.mean(m.predict_raw(b["X"]) != b["y"]))
    assert errors["tree"] < errors["stump"] - 0.03 and errors["tree-random"] < errors["stump"] - 0.03, errors


@pytest.mark.parametrize("rounds,missing", [(1, 0.0), (3, 0.0), (1, 0.05), (3, 0.05)])
def test_logistic_trees_are_lightgbms_on_the_same_bins(tmp_path, rounds, missing):
    """An independent twin of the start, the splits and the leaf steps: LightGBM, given our bin indices as its
    features (each its own bin, the missing bin as NaN) and the same settings, grows the same trees. Its gradients
    are float32, so the scores agree to about 1e-8; a different split or start moves them by 1e-3 or more.
    min_data_in_leaf is 1 on both sides: LightGBM estimates a bin's row count from its hessian sum, mpiboost counts
    rows, so near that bound the two may choose differently."""
    import lightgbm as lgb

    rng = np.random.default_rng(rounds * 10 + int(missing * 100))
    n, d = 4000, 6
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[rng.random(X.shape) < missing] = np.nan
    Z = np.nan_to_num(X)
    logit = 1.5 * Z[:, 0] - Z[:, 1] * Z[:, 2] + np.sin(3 * Z[:, 3])
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), 1, -1).astype(np.int8)
    fmt.write_dataset(tmp_path / "d.h5", X, y)
    model = _model(tmp_path, "m", tmp_path / "d.h5", "--algo", "adaboost", "--loss", "logistic", "--weak-learner",
                   "tree", "--rounds", rounds, "--min-data-in-leaf", 1, "--grad-bins", 0)
    cols = np.empty((d, n), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    ours = model.decision_binned(cols)
    Xb = cols.T.astype(np.float64)
    Xb[Xb == 255] = np.nan  # the missing bin
    params = dict(objective="binary", num_leaves=31, min_data_in_leaf=1, min_sum_hessian_in_leaf=1e-3, lambda_l2=0.0,
                  learning_rate=0.1, max_bin=1024, min_data_in_bin=1, verbose=-1, feature_pre_filter=False,
                  deterministic=True, num_threads=1)
    booster = lgb.train(params, lgb.Dataset(Xb, label=(y > 0).astype(int), params=params), num_boost_round=rounds)
    theirs = booster.predict(Xb, raw_score=True)
    assert np.abs(ours - theirs).max() < 1e-6
    assert [t["num_leaves"] for t in booster.dump_model()["tree_info"]] == [t.n_leaves for t in model.trees]


@pytest.mark.parametrize("rounds", [1, 3])
def test_weighted_logistic_trees_are_lightgbms_on_the_same_bins(rounds):
    """The twin above with sample weights: LightGBM given the same weights (its boost_from_average is the
    weighted log-odds, its leaves the weighted Newton steps) grows the same trees on our bins."""
    import lightgbm as lgb

    import mpiboost

    rng = np.random.default_rng(40 + rounds)
    n, d = 3000, 5
    X = rng.standard_normal((n, d))
    logit = 1.5 * X[:, 0] - X[:, 1] * X[:, 2] + np.sin(3 * X[:, 3])
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    w = rng.uniform(0.2, 3.0, n) * np.where(y == 1, 2.0, 1.0)  # uneven, and heavier positives: the start moves
    model = mpiboost.train({"algo": "gbdt", "rounds": rounds, "min-data-in-leaf": 1, "grad-bins": 0}, X, y,
                           weight=w)
    cols = np.empty((d, n), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    ours = model.decision_binned(cols)
    Xb = cols.T.astype(np.float64)
    params = dict(objective="binary", num_leaves=31, min_data_in_leaf=1, min_sum_hessian_in_leaf=1e-3, lambda_l2=0.0,
                  learning_rate=0.1, max_bin=1024, min_data_in_bin=1, verbose=-1, feature_pre_filter=False,
                  deterministic=True, num_threads=1)
    booster = lgb.train(params, lgb.Dataset(Xb, label=y, weight=w, params=params), num_boost_round=rounds)
    theirs = booster.predict(Xb, raw_score=True)
    assert np.abs(ours - theirs).max() < 1e-6
    unweighted = mpiboost.train({"algo": "gbdt", "rounds": rounds, "min-data-in-leaf": 1, "grad-bins": 0}, X, y)
    assert np.abs(unweighted.decision_binned(cols) - theirs).max() > 1e-3  # the weights matter here


@pytest.mark.parametrize("case", ["binary", "softmax"])
def test_quantized_gradients_grow_trees_about_as_good(files, case):
    """--grad-bins: the trees grown on gradients rounded to a few levels, leaves from the full-precision sums,
    classify the test rows about as well as full precision (the accuracy study's per-set check in small)."""
    d, f = files
    which, algo = ("bin", ["--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree"]) if case == "binary" \
        else ("multi", ["--algo", "softmax"])
    train, test = f[which]
    X = fmt.read_arrays(test)["X"]
    y = fmt.read_arrays(test)["y"]
    errors, models = {}, {}
    for bins in (0, 4, 16):
        models[bins] = _model(d, f"q-{case}-{bins}", train, *algo, "--rounds", 40, "--grad-bins", bins)
        assert models[bins].params["grad_bins"] == bins
        errors[bins] = float(np.mean(models[bins].predict(X) != y))
    assert errors[0] < 0.3, errors  # the full-precision booster learns (the comparison means something)
    for bins in (4, 16):
        assert models[bins].to_json() != models[0].to_json()  # the rounding is in effect
        assert errors[bins] <= errors[0] + 0.02, errors


@pytest.mark.mpi
def test_quantized_histograms_travel_in_half_the_bytes(files, tmp_path):
    """With --grad-bins the histograms' sums are bounded below 2**31, so they travel as int32: half the bytes
    per tree of the int64 fixed-point ones, and the same trees on 1 and 2 ranks."""
    from mpi_util import run_cli

    d, f = files
    per_tree, models = {}, {}
    for bins in (0, 4):
        base = ["train", "--algo", "adaboost", "--loss", "logistic", "--weak-learner", "tree", "--rounds", "5",
                "--data", str(f["bin"][0]), "--grad-bins", str(bins), "--quiet", "--threads", "1"]
        met = tmp_path / f"m{bins}.jsonl"
        proc = run_cli([*base, "--model", str(tmp_path / f"n2-{bins}.h5"), "--metrics", str(met)], n=2)
        assert proc.returncode == 0, proc.stderr
        rounds = [json.loads(line) for line in met.read_text().splitlines() if '"round"' in line]
        per_tree[bins] = [r["bytes_tree"] for r in rounds]
        one = run_cli([*base, "--model", str(tmp_path / f"n1-{bins}.h5")])
        assert one.returncode == 0, one.stderr
        models[bins] = (Model.load(tmp_path / f"n1-{bins}.h5"), Model.load(tmp_path / f"n2-{bins}.h5"))
    for bins, (a, b) in models.items():
        assert a.to_json() == b.to_json(), bins
    ratio = sum(per_tree[4]) / sum(per_tree[0])
    assert ratio < 0.6, (per_tree, ratio)  # the histograms dominate the bytes; leaves and splits are small


def test_packed_gradient_and_hessian_words_add_exactly():
    """pack_sums / unpack_sums against plain int64 sums: rows split over 'ranks' at random, words summed in int32
    in any order, at the bounds the packing allows (|sum g| up to 2**15 - 1, sum h up to 2**16 - 1)."""
    from mpiboost.weak.tree import pack_sums, unpack_sums

    rng = np.random.default_rng(8)
    B = 4
    for K, rows in ((1, 16383), (3, 5000), (1, 1)):  # rows * B < 2**16
        g = rng.integers(-B // 2, B // 2 + 1, (rows, K))
        if rows > 1:
            g[:, 0] = -B // 2  # the most negative sum the bound allows
        h = rng.integers(0, B + 1, (rows, K))
        h[:, -1] = B  # the largest hessian sum
        gh = np.concatenate([g, h, np.ones((rows, 1), dtype=np.int64)], axis=1)
        slots = rng.integers(0, 7, rows)  # rows fall in 7 histogram slots
        ranks = rng.integers(0, 4, rows)
        want = np.zeros((7, 2 * K + 1), dtype=np.int64)
        np.add.at(want, slots, gh)
        total = np.zeros((7, K + 1), dtype=np.int32)
        for r in rng.permutation(4):  # each rank's histogram packed, then the words added in int32
            part = np.zeros((7, 2 * K + 1), dtype=np.int64)
            np.add.at(part, slots[ranks == r], gh[ranks == r])
            total += pack_sums(part)
        np.testing.assert_array_equal(unpack_sums(total), want)
        assert want[:, :K].min() >= -(2**15) and want[:, K:2 * K].max() < 2**16


def test_quantized_first_tree_is_lightgbms_quantized_within_the_rounding(tmp_path):
    """The quantized twin: LightGBM's use_quantized_grad (4 gradient bins, leaves renewed from the full-precision
    gradients, as --grad-bins 4 does) on our bins grows the same first tree where the best splits are clear
    (strong effects, 20,000 rows): the same splits, and leaf values equal to the float32 rounding, since both
    renew them from full-precision sums. The two round at random with different generators, so only splits whose
    gain stands far above the rounding noise can be compared."""
    import lightgbm as lgb

    rng = np.random.default_rng(5)
    n, d = 20000, 5
    X = rng.standard_normal((n, d)).astype(np.float32)
    logit = 3.0 * (X[:, 0] > 0.3) - 2.0 * (X[:, 1] > -0.5) + 0.2 * X[:, 2]
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), 1, -1).astype(np.int8)
    fmt.write_dataset(tmp_path / "d.h5", X, y)
    model = _model(tmp_path, "q", tmp_path / "d.h5", "--algo", "adaboost", "--loss", "logistic", "--weak-learner",
                   "tree", "--rounds", 1, "--min-data-in-leaf", 1, "--max-leaves", 3, "--grad-bins", 4)
    cols = np.empty((d, n), dtype=np.uint8)
    model.bins.transform(X, out=cols.T)
    Xb = cols.T.astype(np.float64)
    params = dict(objective="binary", num_leaves=3, min_data_in_leaf=1, min_sum_hessian_in_leaf=1e-3, lambda_l2=0.0,
                  learning_rate=0.1, max_bin=1024, min_data_in_bin=1, verbose=-1, feature_pre_filter=False,
                  deterministic=True, num_threads=1, use_quantized_grad=True, num_grad_quant_bins=4,
                  quant_train_renew_leaf=True, stochastic_rounding=True)
    booster = lgb.train(params, lgb.Dataset(Xb, label=(y > 0).astype(int), params=params), num_boost_round=1)
    tree = model.trees[0]
    info = booster.dump_model()["tree_info"][0]["tree_structure"]
    splits = []

    def walk(node):
        if "split_feature" in node:
            splits.append((node["split_feature"], int(math.floor(node["threshold"]))))
            walk(node["left_child"])
            walk(node["right_child"])
    walk(info)
    ours = [(int(tree.feature[k]), int(tree.bin[k])) for k in range(tree.n_nodes) if tree.feature[k] >= 0]
    assert sorted(ours) == sorted(splits) and {f for f, _ in ours} == {0, 1}
    theirs = booster.predict(Xb, raw_score=True)
    np.testing.assert_allclose(model.decision_binned(cols), theirs, atol=1e-6)


def test_class_trees_of_many_classes_keep_their_node_hessians(tmp_path):
    """A class tree's node hessian sums its K channels: in floating point, since K int64 sums of up to 2**62
    each wrapped negative (ten classes did), and the saved model was then refused on load and export."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, 4))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], np.quantile(X[:, 0], np.linspace(0, 1, 11)[1:-1])).astype(np.int32)
    fmt.write_dataset(tmp_path / "d10.h5", X, y)
    m = _model(tmp_path, "k10", tmp_path / "d10.h5", "--algo", "samme", "--weak-learner", "tree", "--rounds", 5)
    for t in m.trees:
        assert np.isfinite(t.weight).all() and (t.weight > 0).all()
        assert t.weight[0] == pytest.approx(10 * len(y), rel=1e-9)  # the root: every row, weight 1 per class
    assert _run("export", "--model", tmp_path / "k10.h5", "--format", "json", "--out", tmp_path / "k10.json") == 0
