"""Validation machinery of ``train``: the held-out split, the choice of rounds and of SmoothBoost's epsilon.

The split (``--valid-fraction``) is stratified by (domain, class) and
systematic on the global row order, so it is the same on any number of
ranks; the round choice keeps the earliest round of lowest validation error;
``--epsilon auto`` trains once per grid value and keeps the best; a resumed
run makes the same choice; bad values exit with code 2 before any work.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from mpi_util import mpiexec, run_cli
from mpiboost.boost.smoothboost import EPSILON_GRID
from mpiboost.callbacks import BestRound, RoundEnv
from mpiboost.comm import Comm
from mpiboost.data import labels as lab
from mpiboost.data.format import write_dataset
from mpiboost.data.load import load
from mpiboost.model import Model
from mpiboost.data.subsets import valid_mask


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    """Long-Servedio rows with 10% label noise (and a clean test draw)."""
    work = tmp_path_factory.mktemp("valid")
    for name, args in (("ls", ["--n", "3000", "--noise", "0.1", "--seed", "1"]), ("test", ["--n", "1000", "--seed", "2"])):
        proc = run_cli(["synth", "longservedio", *args, "--out", str(work / f"{name}.h5")])
        assert proc.returncode == 0, proc.stderr
    return work


def _train(work, model, *extra, n=0):
    proc = run_cli(["train", "--data", str(work / "ls.h5"), "--model", str(model), "--quiet", "--threads", "1",
                    *map(str, extra)], n=n, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return Model.load(model)


def _core(m: Model) -> tuple:
    return (m.feature.tolist(), m.bin.tolist(), m.left.tolist(), m.coef.tolist(), m.params)


# ---------------------------------------------------------------- the split
def test_split_is_stratified_exact_and_seeded(tmp_path):
    rng = np.random.default_rng(0)
    n = 1001
    y = np.where(rng.random(n) < 0.13, 1, -1)  # imbalanced, like ijcnn1
    X = rng.random((n, 3)).astype(np.float32)
    write_dataset(tmp_path / "d.h5", X, y)
    shard = load(Comm(), [str(tmp_path / "d.h5")], task="multiclass")
    shard.y = lab.signed(shard.y)
    for F in (0.1, 0.2, 0.5):
        mask = valid_mask(shard, F, seed=3, comm=Comm())
        for c in (-1, 1):
            n_c, v_c = int((shard.y == c).sum()), int(mask[shard.y == c].sum())
            assert np.floor(F * n_c) <= v_c <= np.ceil(F * n_c)
        again = valid_mask(shard, F, seed=3, comm=Comm())
        assert np.array_equal(mask, again)
        # the rows are spread over the file order, not taken from one end
        rows = np.flatnonzero(mask)
        assert rows.min() < n * 0.1 and rows.max() > n * 0.9
    assert not np.array_equal(valid_mask(shard, 0.2, seed=3, comm=Comm()), valid_mask(shard, 0.2, seed=4, comm=Comm()))


def test_valid_fraction_info_and_rows(noisy, tmp_path):
    m = _train(noisy, tmp_path / "m.h5", "--algo", "adaboost", "--rounds", "30", "--valid-fraction", "0.25")
    v = m.info["validation"]
    assert v["fraction"] == 0.25 and abs(v["n_valid"] - 750) <= 2
    assert m.info["n_train"] + v["n_valid"] == 3000
    assert m.n_rounds == 30 and not v["rounds_chosen"]  # reported, not chosen, without --best-round


# ------------------------------------------------------------- round choice
def test_best_round_truncates_to_the_earliest_minimum(noisy, tmp_path):
    metrics = tmp_path / "m.jsonl"
    m = _train(noisy, tmp_path / "m.h5", "--algo", "smoothboost", "--rounds", "60", "--valid-fraction", "0.2",
               "--best-round", "--metrics", metrics)
    rows = [json.loads(x) for x in metrics.read_text().splitlines()]
    curve = [r["valid_error"] for r in rows if "round" in r]
    summary = next(r["summary"] for r in rows if "summary" in r)
    best = int(np.argmin(curve)) + 1
    v = m.info["validation"]
    assert len(curve) == 60 and v["rounds_trained"] == 60
    assert m.n_rounds == best == v["best_round"] == summary["best_round"]
    assert v["best_error"] == min(curve) == summary["valid_error"]
    assert v["curve"][str(best)] == min(curve) and v["curve"]["60"] == curve[-1]
    # the kept model is the first rounds of the full run
    full = _train(noisy, tmp_path / "full.h5", "--algo", "smoothboost", "--rounds", "60", "--valid-fraction", "0.2")
    assert _core(full.truncated(best))[:4] == _core(m)[:4]


def test_bestround_callback_ties_and_patience():
    cb = BestRound(patience=3)
    model = Model.__new__(Model)
    cb.on_train_begin(RoundEnv(t=0, rounds=10, model=model, is_center=True))
    stops = []
    for t, e in enumerate([0.3, 0.2, 0.25, 0.2, 0.21, 0.22], start=1):
        stops.append(cb.on_round_end(RoundEnv(t=t, rounds=10, model=model, is_center=True,
                                              metrics={"valid_error": e})))
    assert cb.best_round == 2  # the earliest of the equal errors
    assert stops == [False, False, False, False, True, True]
    with pytest.raises(ValueError):
        BestRound(patience=0)


def test_early_stop(noisy, tmp_path):
    m = _train(noisy, tmp_path / "m.h5", "--algo", "adaboost", "--rounds", "400", "--valid-fraction", "0.2",
               "--early-stop", "5")
    v = m.info["validation"]
    assert v["rounds_trained"] == v["best_round"] + 5 < 400
    assert m.n_rounds == v["best_round"] and "no better validation error" in m.info["stop_reason"]


# ---------------------------------------------------------- epsilon choice
def test_epsilon_auto_chooses_the_best_grid_value(noisy, tmp_path):
    m = _train(noisy, tmp_path / "auto.h5", "--algo", "smoothboost", "--rounds", "40", "--epsilon", "auto",
               "--valid-fraction", "0.2")
    search = m.info["search"]
    tried = search["tried"]
    assert [t["epsilon"] for t in tried] == list(EPSILON_GRID)
    errs = [t["best_error"] for t in tried]
    chosen = search["chosen"]["epsilon"]
    assert chosen == tried[int(np.argmin(errs))]["epsilon"] and m.params["epsilon"] == chosen
    assert m.info["validation"]["best_error"] == min(errs)
    # the same as training with the chosen value and the round choice
    one = _train(noisy, tmp_path / "one.h5", "--algo", "smoothboost", "--rounds", "40", "--epsilon", chosen,
                 "--valid-fraction", "0.2", "--best-round")
    assert _core(one) == _core(m)


@pytest.mark.mpi
@pytest.mark.skipif(mpiexec() is None, reason="no mpiexec")
def test_same_split_choice_and_model_on_1_to_4_ranks(noisy, tmp_path):
    args = ("--algo", "smoothboost", "--rounds", "30", "--epsilon", "auto", "--valid-fraction", "0.3", "--seed", "5")
    models = {n: _train(noisy, tmp_path / f"m{n}.h5", *args, n=n) for n in (1, 2, 3, 4)}
    ref = models[1]
    for n, m in models.items():
        assert _core(m) == _core(ref), n
        assert m.info["validation"] == ref.info["validation"] and m.info["search"] == ref.info["search"], n
        assert m.info["labels"] == ref.info["labels"], n


def test_resume_makes_the_same_choice(noisy, tmp_path):
    ckpt = tmp_path / "c.h5"
    # gamma given: its default follows --rounds (a run trained on keeps its own, tests/test_train.py)
    args = ("--algo", "smoothboost", "--noise-check", "off", "--gamma", "0.05", "--valid-fraction", "0.2", "--best-round",
            "--checkpoint", ckpt, "--checkpoint-every", "5")
    _train(noisy, tmp_path / "part.h5", *args, "--rounds", "25")
    assert Model.load(ckpt).n_rounds == 25  # the checkpoint holds every trained round, not the best ones
    resumed = _train(noisy, tmp_path / "res.h5", *args, "--rounds", "50", "--resume")
    straight = _train(noisy, tmp_path / "str.h5", "--algo", "smoothboost", "--noise-check", "off", "--gamma", "0.05",
                      "--valid-fraction", "0.2", "--best-round", "--rounds", "50")
    assert _core(resumed) == _core(straight)
    assert resumed.info["validation"] == straight.info["validation"]
    # another split trains on other rows: refused
    proc = run_cli(["train", "--data", str(noisy / "ls.h5"), "--model", str(tmp_path / "x.h5"), "--quiet",
                    "--algo", "smoothboost", "--valid-fraction", "0.3", "--best-round", "--checkpoint", str(ckpt),
                    "--rounds", "50", "--resume"])
    assert proc.returncode == 2 and "--valid-fraction" in proc.stderr


def test_resume_keeps_the_epsilon_choice(noisy, tmp_path):
    ckpt = tmp_path / "c.h5"
    args = ("--algo", "smoothboost", "--weak-learner", "stump", "--epsilon", "auto", "--valid-fraction", "0.2",
            "--gamma", "0.05", "--checkpoint", ckpt)  # gamma given: its default follows --rounds
    _train(noisy, tmp_path / "part.h5", *args, "--rounds", "15")
    assert Model.load(ckpt).info["search"]["chosen"]  # the checkpoint records the choice
    resumed = _train(noisy, tmp_path / "res.h5", *args, "--rounds", "30", "--resume")
    straight = _train(noisy, tmp_path / "str.h5", *args[:10], "--rounds", "30")
    assert _core(resumed) == _core(straight) and resumed.info["search"] == straight.info["search"]


def test_best_round_on_valid_files(noisy, tmp_path):
    m = _train(noisy, tmp_path / "m.h5", "--algo", "adaboost", "--rounds", "40", "--valid", noisy / "test.h5",
               "--best-round")
    v = m.info["validation"]
    assert v["files"] == ["test.h5"] and v["n_valid"] == 1000 and m.n_rounds == v["best_round"] <= 40
    assert m.info["n_train"] == 3000  # nothing held out


# -------------------------------------------------------------- bad options
@pytest.mark.parametrize("extra, message", [
    (["--valid-fraction", "0"], "--valid-fraction must be in"),
    (["--valid-fraction", "0.6"], "--valid-fraction must be in"),
    (["--valid-fraction", "nan"], "--valid-fraction must be"),
    (["--valid-fraction", "0.2", "--valid", "{test}"], "not both"),
    (["--best-round"], "give --valid FILE or --valid-fraction"),
    (["--early-stop", "3"], "give --valid FILE or --valid-fraction"),
    (["--valid-fraction", "0.2", "--early-stop", "0"], "--early-stop must be at least 1"),
    (["--epsilon", "auto"], "--epsilon auto chooses by validation error"),
    (["--epsilon", "often"], "invalid float or auto value"),
    (["--vote", "weighted"], "--vote weighted was removed"),
    (["--valid-fraction", "0.2", "--train-domain", "0"], "--valid-fraction holds out rows of every domain"),
    (["--algo", "msdtra", "--valid", "{test}", "--best-round"], "--best-round is not available for msdtra"),
])
def test_bad_values_exit_2_before_work(noisy, tmp_path, extra, message):
    extra = [a.format(test=noisy / "test.h5") for a in extra]
    model = tmp_path / "never.h5"
    proc = run_cli(["train", "--algo", "smoothboost", "--data", str(noisy / "ls.h5"), "--rounds", "5",
                    "--model", str(model), "--quiet", *extra])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not model.exists()


def test_resuming_an_early_stopped_run_stops_where_it_stopped(noisy, tmp_path):
    """The final checkpoint of a run that stopped early holds every trained round; a resume with more
    rounds and the same patience must not train one more round before checking it."""
    ckpt = tmp_path / "c.h5"
    args = ("--algo", "adaboost", "--valid-fraction", "0.2", "--early-stop", "5", "--checkpoint", ckpt)
    first = _train(noisy, tmp_path / "first.h5", *args, "--rounds", "400")
    trained = first.info["validation"]["rounds_trained"]
    assert trained < 400 and Model.load(ckpt).n_rounds == trained
    resumed = _train(noisy, tmp_path / "res.h5", *args, "--rounds", "400", "--resume")
    assert _core(resumed) == _core(first)
    assert resumed.info["validation"]["rounds_trained"] == trained


# ------------------------------------------------------------ --valid-metric auc
def test_auc_is_the_mann_whitney_statistic():
    """Against scikit-learn's roc_auc_score: random, heavily tied and skewed scores, one positive; weighted (each
    pair counts w_pos w_neg, rows of weight 0 included) against its sample_weight and the repeated rows."""
    from sklearn.metrics import roc_auc_score

    from mpiboost.driver.validation import auc

    rng = np.random.default_rng(0)
    for n, ties, rate in ((200, False, 0.5), (500, True, 0.05), (50, True, 0.5), (1000, False, 0.01)):
        y = np.where(rng.random(n) < rate, 1, -1)
        y[0] = 1
        s = rng.normal(size=n) + 0.7 * y
        if ties:
            s = np.round(s)  # few distinct values: ties count one half
        assert auc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        w = rng.uniform(0.0, 3.0, n) * (rng.random(n) < 0.9)  # some rows weigh 0
        w[0] = 1.0
        assert auc(s, y, w) == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)
        k = rng.integers(1, 4, n)  # integer weights: the repeated rows' AUC
        assert auc(s, y, k.astype(float)) == pytest.approx(auc(np.repeat(s, k), np.repeat(y, k)), abs=1e-15)
    assert auc(np.ones(5), np.ones(5)) == 0.5  # one class: nothing to rank


@pytest.fixture(scope="module")
def imbalanced(tmp_path_factory):
    """About 6% positives, a weak signal: the majority vote is right on most rows whatever the ranking."""
    work = tmp_path_factory.mktemp("auc")
    rng = np.random.default_rng(3)
    for name, n in (("train", 3000), ("valid", 1500)):
        X = rng.normal(size=(n, 6))
        y = np.where(X[:, 0] + 0.8 * X[:, 1] * X[:, 2] + rng.normal(size=n) > 2.4, 1, -1).astype(np.int8)
        write_dataset(work / f"{name}.h5", X, y)
    return work


@pytest.mark.mpi
def test_valid_metric_auc_chooses_the_round_of_best_ranking(imbalanced, tmp_path):
    from sklearn.metrics import roc_auc_score

    from mpiboost.data.format import read_arrays

    v = read_arrays(imbalanced / "valid.h5")
    models = {}
    for n in (1, 3):
        path = tmp_path / f"m{n}.h5"
        proc = run_cli(["train", "--algo", "adaboost", "--weak-learner", "stump", "--data",
                        str(imbalanced / "train.h5"), "--valid",
                        str(imbalanced / "valid.h5"), "--valid-metric", "auc", "--best-round", "--rounds", "60",
                        "--model", str(path), "--quiet", "--threads", "1"], n=n, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        models[n] = Model.load(path)
    m = models[1]
    info = m.info["validation"]
    assert info["metric"] == "auc" and m.n_rounds == info["best_round"]
    assert _core(models[3]) == _core(m) and models[3].info["validation"] == info  # the same on 3 ranks
    # the kept model's validation AUC is the one recorded, and no recorded round ranks better
    cols = np.empty((v["X"].shape[1], v["X"].shape[0]), dtype=np.uint8)
    m.bins.transform(v["X"], out=cols.T)
    kept = 1.0 - roc_auc_score(v["y"], m.decision_binned(cols))
    assert info["best_error"] == pytest.approx(kept, abs=1e-12)
    assert info["best_error"] == min(info["curve"].values())
    # the error metric picks another round here (the majority class wins the error early)
    proc = run_cli(["train", "--algo", "adaboost", "--weak-learner", "stump", "--data", str(imbalanced / "train.h5"),
                    "--valid", str(imbalanced / "valid.h5"), "--best-round", "--rounds", "60", "--model",
                    str(tmp_path / "e.h5"), "--quiet", "--threads", "1"])
    assert proc.returncode == 0
    by_error = Model.load(tmp_path / "e.h5").info["validation"]
    assert by_error["metric"] == "error" and by_error["best_round"] < info["best_round"], (by_error, info)


def test_valid_metric_auc_refuses_more_than_two_classes(tmp_path):
    rng = np.random.default_rng(0)
    write_dataset(tmp_path / "k3.h5", rng.normal(size=(300, 3)), rng.integers(0, 3, 300).astype(np.int32))
    proc = run_cli(["train", "--algo", "samme", "--data", str(tmp_path / "k3.h5"), "--valid-fraction", "0.2",
                    "--valid-metric", "auc", "--best-round", "--rounds", "5", "--model", str(tmp_path / "m.h5")])
    assert proc.returncode == 2 and "--valid-metric auc" in proc.stderr, proc.stderr


def test_files_of_a_run_must_have_the_first_training_files_columns(tmp_path):
    """A --valid file with two columns swapped, or a second --data file with other column names, is refused
    before any row is read (exit 2), naming both files and the first differing column. The API's validation
    DataFrame is matched by column names, as predict matches them: swapped columns give the same model, a
    column of another name is refused."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    y = np.where(X[:, 0] > 0, 1, -1)
    names = ["age", "income", "score"]
    write_dataset(tmp_path / "train.h5", X, y, feature_names=names)
    write_dataset(tmp_path / "swapped.h5", X[:, [1, 0, 2]], y, feature_names=["income", "age", "score"])
    write_dataset(tmp_path / "other.h5", X, y, feature_names=["age", "income", "rating"])
    write_dataset(tmp_path / "same.h5", X, y, feature_names=names)
    model = tmp_path / "m.h5"
    base = ["train", "--algo", "adaboost", "--rounds", "3", "--model", str(model), "--quiet"]
    proc = run_cli([*base, "--data", str(tmp_path / "train.h5"), "--valid", str(tmp_path / "swapped.h5")])
    assert proc.returncode == 2 and not model.exists()
    assert "swapped.h5: column 0 is 'income' but" in proc.stderr and "train.h5 has 'age' there" in proc.stderr
    proc = run_cli([*base, "--data", str(tmp_path / "train.h5"), str(tmp_path / "other.h5")])
    assert proc.returncode == 2 and "other.h5: column 2 is 'rating'" in proc.stderr, proc.stderr
    proc = run_cli([*base, "--data", str(tmp_path / "train.h5"), "--valid", str(tmp_path / "same.h5")])
    assert proc.returncode == 0, proc.stderr
    pd = pytest.importorskip("pandas")
    import mpiboost

    frame = pd.DataFrame(X, columns=names)
    params = {"algo": "adaboost", "rounds": 8, "best-round": True}
    Xv = X[::-1] + 0.5
    want = mpiboost.train(params, frame, y, valid=(pd.DataFrame(Xv, columns=names), y[::-1]))
    got = mpiboost.train(params, frame, y, valid=(pd.DataFrame(Xv, columns=names)[["income", "age", "score"]], y[::-1]))
    assert got.to_json() == want.to_json()
    with pytest.raises(Exception, match="valid: .*missing: score; not the training: rating"):
        mpiboost.train(params, frame, y, valid=(frame.rename(columns={"score": "rating"}), y))


def test_selection_phases_print_a_line_per_training(noisy, tmp_path):
    """The auto search (and every selection phase) prints what it trains, its rounds and seconds and the
    phase's ETA, one line per training, under the round log's rules (--quiet: nothing); the summary line
    counts the phase's seconds."""
    base = ["train", "--algo", "smoothboost", "--data", str(noisy / "ls.h5"), "--rounds", "20",
            "--valid-fraction", "0.2", "--epsilon", "auto", "--threads", "1"]
    proc = run_cli([*base, "--model", str(tmp_path / "a.h5")])
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "search of --epsilon auto" in ln]
    assert len(lines) == len(EPSILON_GRID), proc.stderr
    for i, (line, eps) in enumerate(zip(lines, EPSILON_GRID)):
        assert f"search of --epsilon auto {i + 1}/{len(EPSILON_GRID)} (--epsilon {eps}): 20 rounds in " in line
        assert "ETA" in line
    assert "selection " in proc.stdout  # the summary line
    quiet = run_cli([*base, "--model", str(tmp_path / "q.h5"), "--quiet"])
    assert quiet.returncode == 0 and "search of" not in quiet.stderr
    logged = run_cli([*base, "--model", str(tmp_path / "l.h5"), "--quiet", "--log-every", "5"])
    assert logged.returncode == 0 and logged.stderr.count("search of --epsilon auto") == len(EPSILON_GRID)


# ------------------------------------------------------------ --valid-metric logloss
def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def test_row_logloss_is_the_log_loss_of_the_models_link():
    """Against scikit-learn's log_loss: logistic scores (p = sigmoid(F)), exponential-loss votes
    (p = sigmoid(2 F)), SAMME's class votes (softmax(F / (K - 1))); a sure and wrong row costs -log(1e-15)."""
    from sklearn.metrics import log_loss

    from mpiboost.driver.validation import row_logloss

    class Fake:  # a model of signs (or of K class scores) with a link, or a vote (link None)
        vote, is_regression = "weighted", False

        def __init__(self, link, output="sign"):
            self.link, self.output = link, output

        def proba_of_scores(self, s):
            return Model.proba_of_scores(self, s)

    rng = np.random.default_rng(5)
    F = rng.normal(scale=2.0, size=400)
    y = np.where(rng.random(400) < _sigmoid(F), 1, -1).astype(np.int8)
    for link, scale in (("logistic", 1.0), (None, 2.0)):
        got = row_logloss(Fake(link), F, y)
        assert got.mean() == pytest.approx(log_loss(y > 0, _sigmoid(scale * F)), rel=1e-12)
    sure = row_logloss(Fake("logistic"), np.array([-1000.0, 1000.0]), np.array([1, -1], dtype=np.int8))
    assert sure.tolist() == [-np.log(1e-15)] * 2
    # a label the model does not know (0 for a model of signs, -1 or K for one of K classes): the floor's loss
    assert row_logloss(Fake("logistic"), np.array([0.0]), np.array([0], dtype=np.int8)).tolist() == [-np.log(1e-15)]
    assert row_logloss(Fake(None, "argmax"), np.zeros((2, 3)), np.array([-1, 3])).tolist() == [-np.log(1e-15)] * 2
    # SAMME: K = 3 class votes
    m = Fake(None, "argmax")
    S = rng.normal(size=(300, 3))
    k = rng.integers(0, 3, 300)
    p = np.exp(S / 2) / np.exp(S / 2).sum(axis=1, keepdims=True)
    assert row_logloss(m, S, k).mean() == pytest.approx(log_loss(k, p, labels=[0, 1, 2]), rel=1e-12)


@pytest.mark.mpi
@pytest.mark.parametrize("loss", ["exponential", "logistic"])
def test_valid_metric_logloss_chooses_the_round_of_least_logloss(imbalanced, tmp_path, loss):
    """The kept round's recorded log-loss is scikit-learn's log_loss of the kept model's probabilities (the
    link by hand: sigmoid(2 F) for AdaBoost's votes, sigmoid(F) for logistic trees), no recorded round is
    lower, and the run is the same on 3 ranks."""
    from sklearn.metrics import log_loss

    from mpiboost.data.format import read_arrays

    v = read_arrays(imbalanced / "valid.h5")
    models = {}
    for n in (1, 3):
        path = tmp_path / f"m{n}.h5"
        proc = run_cli(["train", "--algo", "adaboost", "--weak-learner", "stump", "--loss", loss, "--data",
                        str(imbalanced / "train.h5"), "--valid", str(imbalanced / "valid.h5"), "--valid-metric",
                        "logloss", "--best-round", "--rounds", "60", "--model", str(path), "--threads", "1",
                        "--log-every", "20"], n=n, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        models[n] = Model.load(path)
    assert "valid log-loss" in proc.stdout and "valid log-loss" in proc.stderr, (proc.stdout, proc.stderr)
    m = models[1]
    info = m.info["validation"]
    assert info["metric"] == "logloss" and m.n_rounds == info["best_round"]
    assert _core(models[3]) == _core(m) and models[3].info["validation"] == info  # the same on 3 ranks
    cols = np.empty((v["X"].shape[1], v["X"].shape[0]), dtype=np.uint8)
    m.bins.transform(v["X"], out=cols.T)
    F = m.decision_binned(cols)
    kept = log_loss(v["y"] > 0, _sigmoid((2.0 if loss == "exponential" else 1.0) * F))
    assert info["best_error"] == pytest.approx(kept, rel=1e-12)
    assert info["best_error"] == min(info["curve"].values())


def test_valid_metric_logloss_weighs_rows_and_averages_tasks(tmp_path):
    """With sample weights, scikit-learn's weighted log_loss; a model per task: the mean of its tasks' weighted
    log-losses."""
    from sklearn.metrics import log_loss

    proc = run_cli(["synth", "multitask", "--n", "400", "--dataset", "2", "--seed", "1", "--out",
                    str(tmp_path / "mt.h5")])
    assert proc.returncode == 0, proc.stderr
    from mpiboost.data.format import read_arrays

    a = read_arrays(tmp_path / "mt.h5")
    w = np.random.default_rng(2).choice([0.5, 1.0, 3.0], size=a["y"].size)
    write_dataset(tmp_path / "w.h5", a["X"], a["y"], a["domain"], weight=w)
    proc = run_cli(["train", "--algo", "is-multitask", "--baseline-guard", "off", "--start", "zero", "--data",
                    str(tmp_path / "w.h5"), "--valid", str(tmp_path / "w.h5"), "--valid-metric", "logloss",
                    "--rounds", "15", "--model", str(tmp_path / "m.h5"), "--quiet", "--threads", "1"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = Model.load(tmp_path / "m.h5")
    p = _sigmoid(2.0 * m.decision_function(a["X"], a["domain"]))
    want = np.mean([log_loss(a["y"][g] > 0, p[g], sample_weight=w[g], labels=[False, True])
                    for g in (a["domain"] == k for k in np.unique(a["domain"]))])
    assert m.info["validation"]["last_error"] == pytest.approx(want, rel=1e-12)
