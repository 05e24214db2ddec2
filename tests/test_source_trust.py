"""--source-trust: how far a transfer run trusts its sources, from k-fold evidence on the target rows."""
import json

import numpy as np
import pytest

from mpi_util import run_cli
from mpiboost import source_trust
from mpiboost.comm import world
from mpiboost.data.format import write_dataset
from mpiboost.data.synth import transfer as synth_transfer
from mpiboost.evaluate import evaluate
from mpiboost.train import train


def _write(path, data):
    write_dataset(path, data.X, data.y, data.domain, feature_names=data.feature_names,
                  domain_names=data.domain_names, attrs=data.attrs)
    return str(path)


def _case(tmp_path, name, rho, target_n=40, n=400, seed=3):
    data = synth_transfer.generate(n, sources=len(rho), target_n=target_n, seed=seed, task_seed=seed, relatedness=rho)
    test = synth_transfer.generate(3000, sources=0, seed=100 + seed, task_seed=seed)
    te = tmp_path / f"{name}-test.h5"
    write_dataset(te, test.X, test.y)
    return _write(tmp_path / f"{name}.h5", data), str(te)


def _fit(path, algo="msdtra", rounds=30, **params):
    where = {} if algo == "adaboost" else {"target_domain": 0}
    return train(world(), [path], algorithm=algo, rounds=rounds,
                 params={"weak_learner": "histogram", **where, **params}, seed=0)


def _ensemble(model):
    return json.loads(model.to_json())["ensemble"]


def test_the_folds_split_each_class_evenly():
    class Shard:
        pass

    rng = np.random.default_rng(0)
    sh = Shard()
    sh.domain = rng.integers(0, 3, 500).astype(np.int32)
    sh.y = np.where(rng.random(500) < 0.2, 1, -1).astype(np.int8)
    sh.n_classes = 2
    fold = source_trust.target_folds(sh, 1, 7, 5, world())
    t = sh.domain == 1
    assert np.all(fold[~t] == -1) and np.all((fold[t] >= 0) & (fold[t] < 7))
    for c in (-1, 1):
        sizes = np.bincount(fold[t & (sh.y == c)], minlength=7)
        assert sizes.max() - sizes.min() <= 1
    sizes = np.bincount(fold[t], minlength=7)
    assert sizes.max() - sizes.min() <= 1
    assert not np.array_equal(fold, source_trust.target_folds(sh, 1, 7, 6, world()))  # the seed permutes


def test_harmful_sources_give_the_target_only_model(tmp_path):
    """Sources unrelated to the target rule: MSDTrA's chains fit the few target rows they train on and vote
    (test error ~1/2); each source alone is no better than a coin on the target rows (the screen), and the
    model is AdaBoost on the target rows, without folds."""
    path, test = _case(tmp_path, "adv", [0.0, 0.0])
    res = _fit(path)
    rec = res.model.info["source_trust"]
    assert rec["chosen"] == "target" and rec["folds"] == 0 and "tried" not in rec, rec
    assert set(rec["screen"]) == {"1", "2", "sources"}
    assert not any(source_trust.carries_over(v["errors"], rec["n_target"]) for v in rec["screen"].values())
    assert "each source alone on the target rows" in source_trust.describe(rec)
    alone = _fit(path, "adaboost", train_domain=0)  # AdaBoost-k on the target rows, same bins
    assert _ensemble(res.model) == _ensemble(alone.model)
    trusted = _fit(path, source_trust="algorithm")
    assert evaluate(world(), res.model, [test])["error"] < evaluate(world(), trusted.model, [test])["error"] - 0.2


def test_the_screen_is_each_source_alone_on_every_target_row(tmp_path):
    """The screen's counts are those of AdaBoost trained on one source's rows, scored on all the target rows;
    a rule carries over when its error is below 1/2 by one standard error of a coin's (0.5 / sqrt(n))."""
    from mpiboost.data.load import load

    path, _ = _case(tmp_path, "scr", [0.95, -0.9])
    rec = _fit(path).model.info["source_trust"]
    shard = load(world(), [path], task="binary")
    target = np.flatnonzero(shard.domain == 0)
    for k in (1, 2):
        alone = _fit(path, "adaboost", train_domain=k).model
        pred = np.where(alone.decision_function(np.ascontiguousarray(shard.cols[:, target])) >= 0, 1, -1)
        assert rec["screen"][str(k)]["errors"] == int(np.sum(pred != shard.y[target]))
    n = rec["n_target"]
    assert source_trust.carries_over(rec["screen"]["1"]["errors"], n)  # the helpful source
    assert not source_trust.carries_over(rec["screen"]["2"]["errors"], n)  # the opposite rule
    assert rec["folds"] > 0  # one source carries over: the folds decide
    assert source_trust.carries_over(int(n / 2 - 0.5 * np.sqrt(n)) - 1, n)
    assert not source_trust.carries_over(int(np.ceil(n / 2 - 0.5 * np.sqrt(n))), n)


def test_helpful_sources_are_used(tmp_path):
    """Sources of nearly the target's rule: the folds keep them (here pooling tests as well as MSDTrA), and the
    model beats AdaBoost on the target rows alone by far."""
    path, test = _case(tmp_path, "help", [0.95, 0.9])
    res = _fit(path)
    rec = res.model.info["source_trust"]
    assert rec["chosen"] in ("algorithm", "pooled") and rec["folds"] == 10, rec
    assert rec["tried"]["target"]["errors"] > rec["tried"][rec["chosen"]]["errors"]
    alone = _fit(path, "adaboost", train_domain=0)
    assert evaluate(world(), res.model, [test])["error"] < evaluate(world(), alone.model, [test])["error"] - 0.05


def test_the_algorithm_stays_unless_an_alternative_wins_by_one_standard_error(tmp_path):
    path, _ = _case(tmp_path, "mixed", [0.95, -0.5])
    rec = _fit(path).model.info["source_trust"]
    for s in ("pooled", "target"):
        t = rec["tried"][s]
        assert t["gain"] == (rec["tried"]["algorithm"]["errors"] - t["errors"]) / rec["n_target"]
        if rec["chosen"] == "algorithm":
            assert t["gain"] <= t["se"] or t["gain"] <= 0
    if rec["chosen"] != "algorithm":
        assert rec["tried"][rec["chosen"]]["gain"] > rec["tried"][rec["chosen"]]["se"]
    res = _fit(path, source_trust="algorithm")
    assert res.model.algorithm == "msdtra"


@pytest.mark.parametrize("given", ["pooled", "target"])
def test_a_given_trust_trains_that_model_without_folds(tmp_path, given):
    path, _ = _case(tmp_path, "g", [0.5])
    res = _fit(path, source_trust=given)
    assert res.model.info["source_trust"] == {"chosen": given, "rule": "given (--source-trust)"}
    same = _fit(path, "adaboost", **({"train_domain": 0} if given == "target" else {}))
    assert _ensemble(res.model) == _ensemble(same.model)
    assert res.summary["source_trust"]["chosen"] == given


def test_too_few_target_rows_of_a_class_keep_the_algorithm(tmp_path):
    data = synth_transfer.generate(300, sources=1, target_n=12, seed=1, task_seed=1, relatedness=[0.9])
    t = np.flatnonzero(data.domain == 0)
    data.y[t] = -1
    data.y[t[0]] = 1  # one positive target row: it cannot be both held out and trained on
    path = _write(tmp_path / "few.h5", data)
    rec = _fit(path).model.info["source_trust"]
    assert rec["chosen"] == "algorithm" and rec["folds"] == 0 and "1 row(s)" in rec["rule"]


def test_the_folds_are_leave_one_out_at_most(tmp_path):
    path, _ = _case(tmp_path, "loo", [0.9], target_n=6)
    rec = _fit(path, rounds=5).model.info["source_trust"]
    assert rec["folds"] == 6 and rec["n_target"] == 6


@pytest.mark.mpi
def test_same_choice_and_model_on_any_number_of_ranks_and_resume(tmp_path):
    path, _ = _case(tmp_path, "adv", [0.0, 0.0])
    exports = set()
    for n in (1, 3):
        model = tmp_path / f"m{n}.h5"
        proc = run_cli(["train", "--algo", "msdtra", "--data", path, "--rounds", "12", "--model", str(model)], n=n)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert ("source trust: target, the model is AdaBoost on the target rows alone (each source alone on the "
                "target rows: ") in proc.stdout, proc.stdout
        exports.add(run_cli(["export", "--model", str(model)]).stdout)
    assert len(exports) == 1
    ckpt = tmp_path / "ckpt.h5"
    base = ["train", "--algo", "msdtra", "--data", path, "--rounds", "12", "--checkpoint", str(ckpt)]
    assert run_cli([*base, "--model", str(tmp_path / "x.h5"), "--checkpoint-every", "100"], n=2).returncode == 0
    from mpiboost.model import Model

    Model.load(ckpt).truncated(5).save(ckpt)  # a run killed after round 5 of its chosen AdaBoost
    proc = run_cli([*base, "--model", str(tmp_path / "r.h5"), "--resume"], n=2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert run_cli(["export", "--model", str(tmp_path / "r.h5")]).stdout == exports.pop()
    proc = run_cli([*base, "--model", str(tmp_path / "r2.h5"), "--resume", "--source-trust", "algorithm"], n=1)
    assert proc.returncode == 2 and "--source-trust target" in proc.stderr, proc.stderr[-2000:]


def test_the_baselines_with_trees():
    """Pooled trees are gradient-boosted (logistic loss); the target-only baseline keeps trees only where the
    target rows can fill two leaves twice over, else it is AdaBoost with stumps."""
    params = {"weak_learner": "tree", "max_leaves": 15, "min_data_in_leaf": 5, "target_domain": "t",
              "source_trust": "cv", "candidates": "target"}
    name, p = source_trust.strategy_run("pooled", "msdtra", params, 2, 10)
    assert name == "adaboost" and p == {"weak_learner": "tree", "max_leaves": 15, "min_data_in_leaf": 5,
                                        "loss": "logistic"}
    assert source_trust.strategy_run("target", "msdtra", params, 2, 19)[1] == {"weak_learner": "stump",
                                                                              "train_domain": 2}
    assert source_trust.strategy_run("target", "msdtra", params, 2, 20)[1] == {
        "weak_learner": "tree", "max_leaves": 15, "min_data_in_leaf": 5, "train_domain": 2}
    assert source_trust.strategy_run("algorithm", "msdtra", params, 2, 20) == ("msdtra", params)


def test_trees_as_candidates_train_through_the_folds(tmp_path):
    path, test = _case(tmp_path, "trees", [0.0, 0.0], target_n=60)
    res = _fit(path, rounds=10, weak_learner="tree", max_leaves=4, min_data_in_leaf=5)
    rec = res.model.info["source_trust"]
    assert rec["chosen"] == "target" and res.model.has_trees, rec
    assert evaluate(world(), res.model, [test])["error"] < 0.35


def test_the_folds_report_their_progress(tmp_path):
    from mpiboost.callbacks import Callback, ProgressBar

    class Steps(Callback):
        def __init__(self):
            self.seen = []

        def on_search(self, what, done, total, is_center):
            self.seen.append((what, done, total))

    path, _ = _case(tmp_path, "p", [0.9], target_n=12)
    steps = Steps()
    train(world(), [path], algorithm="msdtra", rounds=3, params={"target_domain": 0, "source_folds": 4},
          seed=0, callbacks=[steps, ProgressBar(enabled=False)])
    assert steps.seen == [("source trust folds", i, 12) for i in range(1, 13)]
