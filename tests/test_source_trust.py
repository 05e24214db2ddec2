"""--source-trust: how far a transfer run trusts its sources, from k-fold evidence on the target rows."""
import json

import numpy as np
import pytest

from mpi_util import run_cli
from mpiboost.driver.selection import source_trust
from mpiboost.comm import world
from mpiboost.data.format import write_dataset
from mpiboost.data.synth import transfer as synth_transfer
from mpiboost.evaluate import evaluate
from runs import train


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


def _target_file(tmp_path, path):
    """The target rows of ``path`` alone, in a file of their own."""
    from mpiboost.data.load import load

    sh = load(world(), [path], task="binary", keep_raw=True)
    t = sh.domain == 0
    out = tmp_path / "target-alone.h5"
    write_dataset(out, sh.X[t], sh.y[t])
    return str(out)


def _same_as_target_alone(tmp_path, path, model, rounds=30):
    """``model`` is AdaBoost on the target rows of ``path`` alone, from a file of their own: bins, splits and
    votes alike."""
    alone = _fit(_target_file(tmp_path, path), "adaboost", rounds=rounds).model
    assert _ensemble(model) == _ensemble(alone)


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
    assert not any(v["carries_over"] for v in rec["screen"].values())
    assert "each source alone on the target rows" in source_trust.describe(rec)
    _same_as_target_alone(tmp_path, path, res.model)
    trusted = _fit(path, source_trust="algorithm")
    assert evaluate(world(), res.model, [test])["error"] < evaluate(world(), trusted.model, [test])["error"] - 0.2


def test_the_screen_is_each_source_alone_on_every_target_row(tmp_path):
    """The screen's counts and margins are those of AdaBoost with trees (whatever the run's weak learner)
    trained on one source's rows, scored on all the target rows; the helpful source carries over, the
    opposite rule does not."""
    from mpiboost.data.load import load

    path, _ = _case(tmp_path, "scr", [0.95, -0.9])
    rec = _fit(path).model.info["source_trust"]
    shard = load(world(), [path], task="binary")
    target = np.flatnonzero(shard.domain == 0)
    y = shard.y[target].astype(float)
    for k in (1, 2):
        alone = _fit(path, "adaboost", train_domain=k, weak_learner="tree").model
        score = alone.decision_binned(np.ascontiguousarray(shard.cols[:, target]))
        assert rec["screen"][str(k)]["errors"] == int(np.sum(np.where(score >= 0, 1, -1) != y))
        margin = y * score / np.abs(alone.vote_coefficients()).sum()
        assert rec["screen"][str(k)]["margin"] == pytest.approx(margin.mean(), rel=1e-12)
    assert rec["screen"]["1"]["carries_over"]  # the helpful source
    assert not rec["screen"]["2"]["carries_over"]  # the opposite rule
    assert rec["folds"] > 0  # one source carries over: the folds decide


def _stats(m):
    m = np.asarray(m, dtype=float)
    return {"margin_sum": float(m.sum()), "margin_square": float((m * m).sum())}


@pytest.mark.parametrize("case", ["random", "skewed", "ten rows", "constant", "two rows"])
def test_carries_over_is_a_one_sided_t_test_at_the_family_wise_level(case):
    """Against scipy's one-sample t-test: the margins' mean above 0 at level 1 - (1 - SCREEN_LEVEL)^(1/K)."""
    from scipy.stats import ttest_1samp

    rng = np.random.default_rng(len(case))
    for trial in range(200):
        n = {"ten rows": 10, "two rows": 2}.get(case, int(rng.integers(3, 60)))
        m = rng.normal(rng.normal(0, 0.15), 0.3, n)
        if case == "skewed":
            m = np.clip(rng.exponential(0.2, n) - 0.18, -1, 1)
        if case == "constant":
            m = np.full(n, rng.choice([-0.2, 0.0, 0.3]))
        K = int(rng.integers(1, 6))
        got = source_trust.carries_over(_stats(m), n, K)
        if case == "constant":
            assert got == (m[0] > 0)
            continue
        p = ttest_1samp(m, 0.0, alternative="greater").pvalue
        want = p < 1 - (1 - source_trust.SCREEN_LEVEL) ** (1 / K)
        if abs(p - (1 - (1 - source_trust.SCREEN_LEVEL) ** (1 / K))) > 1e-9:  # not on the boundary
            assert got == want, (case, trial, n, K, p)
    assert not source_trust.carries_over(_stats([0.5]), 1, 1)  # one row: no test


def test_helpful_sources_are_used(tmp_path):
    """Sources of nearly the target's rule: both pass the screen, so pooling them is the incumbent, and the
    folds keep the sources; the model beats AdaBoost on the target rows alone by far."""
    path, test = _case(tmp_path, "help", [0.95, 0.9])
    res = _fit(path)
    rec = res.model.info["source_trust"]
    assert rec["screen"]["1"]["carries_over"] and rec["screen"]["2"]["carries_over"], rec
    assert rec["incumbent"] == "pooled" and "every source alone carries over: pooled unless" in rec["rule"]
    assert rec["chosen"] in ("algorithm", "pooled") and rec["folds"] == 10, rec
    assert rec["tried"]["target"]["errors"] > rec["tried"][rec["chosen"]]["errors"]
    _gains_against(rec, "pooled")
    alone = _fit(path, "adaboost", train_domain=0)
    assert evaluate(world(), res.model, [test])["error"] < evaluate(world(), alone.model, [test])["error"] - 0.05


def _gains_against(rec, incumbent):
    """Each way's gain is over the incumbent's held-out errors; the incumbent stays unless one gains more than
    one standard error, and then the largest such gain wins. Re-derived from the recorded counts: the paired
    differences rebuilt as +1, -1 and 0 (``differ`` rows differ), their mean and standard error by numpy."""
    n = rec["n_target"]
    beat = {}
    for s, t in rec["tried"].items():
        total = rec["tried"][incumbent]["errors"] - t["errors"]
        assert (t["differ"] + total) % 2 == 0 and abs(total) <= t["differ"] <= n, (s, t)
        d = np.array([1] * ((t["differ"] + total) // 2) + [-1] * ((t["differ"] - total) // 2) + [0] * (n - t["differ"]))
        gain, se = d.mean(), d.std(ddof=1) / np.sqrt(n)
        assert np.isclose(t["gain"], gain, rtol=1e-12, atol=0) and np.isclose(t["se"], se, rtol=1e-12, atol=1e-15)
        if s != incumbent and gain > 0 and gain > se:
            beat[s] = gain
    assert rec["chosen"] == (max(beat, key=lambda s: (beat[s], -list(rec["tried"]).index(s))) if beat else incumbent)
    # the same outcomes against the target alone (what a rule with the target as incumbent reads)
    for s, t in rec["vs_target"].items():
        assert t["errors"] == rec["tried"][s]["errors"]
        assert np.isclose(t["gain"], (rec["tried"]["target"]["errors"] - t["errors"]) / n, rtol=1e-12, atol=0)
        assert abs(rec["tried"]["target"]["errors"] - t["errors"]) <= t["differ"] <= n
    assert rec["vs_target"]["target"]["differ"] == 0


def test_the_algorithm_stays_unless_an_alternative_wins_by_one_standard_error(tmp_path):
    """One source of the target's rule and one against it: the transfer algorithm is the incumbent."""
    path, _ = _case(tmp_path, "mixed", [0.95, -0.5])
    rec = _fit(path).model.info["source_trust"]
    assert rec["screen"]["1"]["carries_over"] and not rec["screen"]["2"]["carries_over"], rec
    assert rec["incumbent"] == "algorithm"
    _gains_against(rec, "algorithm")
    res = _fit(path, source_trust="algorithm")
    assert res.model.algorithm == "msdtra"


def _balanced_file(tmp_path, path, weight=None):
    """``path``'s rows in a file of their own with sample weights by numpy: the target rows' (domain 0) scaled
    so that they weigh as much, together, as all the source rows."""
    from mpiboost.data.format import read_arrays

    a = read_arrays(path)
    w = np.ones(a["y"].size) if weight is None else np.asarray(weight, dtype=np.float64)
    t = a["domain"] == 0
    w = np.where(t, w * w[~t].sum() / w[t].sum(), w)
    out = tmp_path / "balanced-twin.h5"
    write_dataset(out, a["X"], a["y"], weight=w)
    return str(out)


@pytest.mark.parametrize("given", ["pooled", "balanced", "target"])
def test_a_given_trust_trains_that_model_without_folds(tmp_path, given):
    path, _ = _case(tmp_path, "g", [0.5])
    res = _fit(path, source_trust=given)
    assert res.model.info["source_trust"] == {"chosen": given, "rule": "given (--source-trust)"}
    if given == "target":
        _same_as_target_alone(tmp_path, path, res.model)
    elif given == "balanced":  # AdaBoost on every row, weighted by numpy
        assert _ensemble(res.model) == _ensemble(_fit(_balanced_file(tmp_path, path), "adaboost").model)
        assert _ensemble(res.model) != _ensemble(_fit(path, "adaboost").model)
    else:
        assert _ensemble(res.model) == _ensemble(_fit(path, "adaboost").model)
    assert res.summary["source_trust"]["chosen"] == given


def test_too_few_target_rows_of_a_class_keep_the_algorithm_once_a_source_carries_over(tmp_path):
    """One positive target row cannot be both held out and trained on: no folds. The screen needs none: with
    a source of the target's rule the algorithm stays; with the labels turned against every source, the target
    rows alone."""
    data = synth_transfer.generate(300, sources=1, target_n=80, seed=1, task_seed=1, relatedness=[0.95])
    t = data.domain == 0
    pos, neg = np.flatnonzero(t & (data.y > 0)), np.flatnonzero(t & (data.y < 0))
    keep = ~t
    keep[pos[:1]] = keep[neg[:15]] = True  # one positive, fifteen negative target rows, their own labels
    for name in ("X", "y", "domain"):
        setattr(data, name, getattr(data, name)[keep])
    path = _write(tmp_path / "few.h5", data)
    rec = _fit(path).model.info["source_trust"]
    assert rec["screen"]["1"]["carries_over"], rec
    assert rec["chosen"] == "algorithm" and rec["folds"] == 0 and "1 row(s)" in rec["rule"]
    data.y[data.domain == 0] *= -1  # fifteen positives, one negative: the source's rule is wrong on them
    path = _write(tmp_path / "few-against.h5", data)
    rec = _fit(path).model.info["source_trust"]
    assert rec["chosen"] == "target" and not rec["screen"]["1"]["carries_over"], rec


def test_the_folds_are_leave_one_out_at_most(tmp_path):
    path, _ = _case(tmp_path, "loo", [0.9], target_n=6)
    rec = _fit(path, rounds=10).model.info["source_trust"]
    assert rec["screen"]["1"]["carries_over"], rec  # the folds run
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


def test_the_folds_give_the_same_counts_and_model_on_any_number_of_ranks(tmp_path):
    """A source that carries over: the folds train the target rows alone in their own bins (their raw values
    read again on each rank) and score the held-out rows in them; the same counts and model on 1 and 3 ranks."""
    path, _ = _case(tmp_path, "mix", [0.9, -0.6], target_n=30)
    out = []
    for n in (1, 3):
        model = tmp_path / f"f{n}.h5"
        proc = run_cli(["train", "--algo", "msdtra", "--data", path, "--rounds", "8", "--model", str(model),
                        "--source-folds", "3"], n=n)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "3-fold held-out target errors" in proc.stdout, proc.stdout
        out.append((proc.stdout.split("source trust:")[1].split("]")[0], run_cli(["export", "--model", str(model)]).stdout))
    assert out[0] == out[1]


def test_the_target_alone_scores_validation_files_in_its_own_bins(tmp_path):
    """The target-only model's validation error is that of the saved model on the validation file."""
    path, test = _case(tmp_path, "vf", [0.0, 0.0], target_n=60)
    res = train(world(), [path], algorithm="msdtra", rounds=20, valid=[test],
                params={"weak_learner": "histogram", "target_domain": 0, "source_trust": "target"}, seed=0)
    assert res.model.info["validation"]["last_error"] == evaluate(world(), res.model, [test])["error"]
    _same_as_target_alone(tmp_path, path, res.model, rounds=20)


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
    # the screen's one training (one source), then the folds'; a callback of the older on_search hook hears them
    assert steps.seen == [("source screen", 1, 1)] + [("source trust folds", i, 16) for i in range(1, 17)]


def test_balanced_keeps_the_files_weights_within_each_side(tmp_path):
    """With sample weights, each side keeps its rows' relative weights and the target's total becomes the
    sources': the model is AdaBoost on the rows weighted so by numpy."""
    path, _ = _case(tmp_path, "w", [0.5], target_n=60)
    from mpiboost.data.format import read_arrays

    a = read_arrays(path)
    w = np.random.default_rng(4).choice([0.5, 1.0, 3.0], size=a["y"].size)
    weighted = tmp_path / "weighted.h5"
    write_dataset(weighted, a["X"], a["y"], a["domain"], weight=w, domain_names=["target", "source1"])
    res = _fit(str(weighted), source_trust="balanced")
    assert _ensemble(res.model) == _ensemble(_fit(_balanced_file(tmp_path, path, w), "adaboost").model)
