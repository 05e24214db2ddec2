"""SmoothBoost's noise check (``--noise-check holdout``, the default): held-out rows decide between it and AdaBoost.

On clean labels SmoothBoost's weight cap only costs accuracy and AdaBoost, its simplest baseline,
tests better; with flipped labels SmoothBoost wins. The check trains both on 80% of the training
rows (or on them all, scored on the validation rows, when the run has any), keeps SmoothBoost unless
AdaBoost has fewer held-out errors by more than one standard error, and trains the one chosen on
every row. Checked here: the choice on clean and on noisy rows, and on rows where AdaBoost is
ahead by less than one standard error; every choice re-derived from the counts it records; the counts
against a naive twin (both models trained and scored by hand), the same choice and model on 1 to 4
ranks, resuming, and the runs that make no check.
"""
from __future__ import annotations

import numpy as np
import pytest

from mpi_util import mpiexec, run_cli
from mpiboost.data.format import read_arrays
from mpiboost.model import Model
from mpiboost.driver.selection.noise_check import MIN_ROWS

TREES = ("--weak-learner", "tree", "--max-leaves", "8", "--rounds", "30", "--seed", "3")


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Long-Servedio rows, clean and with 20% of the labels flipped, and a clean validation draw."""
    work = tmp_path_factory.mktemp("noise_check")
    for name, args in (("clean", ["--n", "4000", "--seed", "1"]), ("noisy", ["--n", "4000", "--noise", "0.2", "--seed", "1"]),
                       ("valid", ["--n", "1500", "--seed", "2"]), ("small", ["--n", str(MIN_ROWS - 1), "--seed", "1"]),
                       ("close", ["--n", "1000", "--noise", "0.05", "--seed", "3"])):
        proc = run_cli(["synth", "longservedio", *args, "--out", str(work / f"{name}.h5")])
        assert proc.returncode == 0, proc.stderr
    return work


def _train(data, model, *extra, n=0) -> Model:
    proc = run_cli(["train", "--data", str(data), "--model", str(model), "--quiet", "--threads", "1",
                    *map(str, extra)], n=n, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return Model.load(model)


def rederive(rec: dict) -> str:
    """The choice the rule makes from a record's counts, computed apart from mpiboost: the paired per-row
    differences (SmoothBoost's error minus AdaBoost's) rebuilt as a vector of +1, -1 and 0, their mean and
    its standard error by numpy; AdaBoost only when the mean is above 0 and above one standard error."""
    n, t = rec["held_out"], rec["tried"]
    total = t["algorithm"]["errors"] - t["adaboost"]["errors"]
    differ = t["adaboost"]["differ"]
    assert (differ + total) % 2 == 0 and abs(total) <= differ <= n, rec
    d = np.array([1] * ((differ + total) // 2) + [-1] * ((differ - total) // 2) + [0] * (n - differ))
    gain, se = d.mean(), d.std(ddof=1) / np.sqrt(n)
    assert np.isclose(t["adaboost"]["gain"], gain, rtol=1e-12, atol=0)
    assert np.isclose(t["adaboost"]["se"], se, rtol=1e-12, atol=0)
    return "adaboost" if gain > 0 and gain > se else "algorithm"


def _core(m: Model) -> tuple:
    return (m.algorithm, m.feature.tolist(), m.bin.tolist(), m.left.tolist(), m.coef.tolist(), m.params)


def test_clean_labels_give_adaboost_trained_on_every_row(sets, tmp_path):
    m = _train(sets / "clean.h5", tmp_path / "m.h5", "--algo", "smoothboost", *TREES)
    rec = m.info["noise_check"]
    assert rec["chosen"] == "adaboost" == rederive(rec) and m.algorithm == "adaboost", rec
    t = rec["tried"]
    assert t["adaboost"]["errors"] < t["algorithm"]["errors"]
    assert t["adaboost"]["gain"] > t["adaboost"]["se"] > 0
    assert rec["held_out"] == 800  # 20% of 4,000 rows, stratified: floor or ceil per class
    # the model is AdaBoost's with the same weak learner on every row, bit for bit
    ada = _train(sets / "clean.h5", tmp_path / "a.h5", "--algo", "adaboost", *TREES)
    assert _core(m)[1:5] == _core(ada)[1:5] and m.params == ada.params
    # --noise-check off: SmoothBoost as asked (the paper)
    off = _train(sets / "clean.h5", tmp_path / "o.h5", "--algo", "smoothboost", "--noise-check", "off", *TREES)
    assert off.algorithm == "smoothboost" and off.info["noise_check"]["chosen"] == "algorithm"
    assert "--noise-check off" in off.info["noise_check"]["rule"]


def test_noisy_labels_keep_smoothboost(sets, tmp_path):
    m = _train(sets / "noisy.h5", tmp_path / "m.h5", "--algo", "smoothboost", *TREES)
    rec = m.info["noise_check"]
    assert rec["chosen"] == "algorithm" == rederive(rec) and m.algorithm == "smoothboost", rec
    assert rec["tried"]["algorithm"]["errors"] <= rec["tried"]["adaboost"]["errors"]
    off = _train(sets / "noisy.h5", tmp_path / "o.h5", "--algo", "smoothboost", "--noise-check", "off", *TREES)
    # the model trained after the check is the one asked for, on every row (the parameters differ in the check only)
    assert _core(m)[:5] == _core(off)[:5]
    assert {**m.params, "noise_check": "off"} == off.params


def test_a_gain_within_one_standard_error_keeps_smoothboost(sets, tmp_path):
    """AdaBoost ahead on the held-out rows, but by less than one standard error of the paired differences:
    the algorithm asked for stays (a rule of "fewer errors" alone would switch)."""
    m = _train(sets / "close.h5", tmp_path / "m.h5", "--algo", "smoothboost", *TREES[:2], "--max-leaves", "4",
               *TREES[4:])
    rec = m.info["noise_check"]
    ada = rec["tried"]["adaboost"]
    assert ada["errors"] < rec["tried"]["algorithm"]["errors"] and 0 < ada["gain"] <= ada["se"], rec
    assert rec["chosen"] == "algorithm" == rederive(rec) and m.algorithm == "smoothboost", rec
    assert rec["held_out"] == 200  # 20% of 1,000 rows


def test_counts_on_validation_rows_match_a_naive_twin(sets, tmp_path):
    """With validation rows the check trains on every training row and counts errors on the validation rows:
    the same counts as training both models by hand and scoring them."""
    m = _train(sets / "noisy.h5", tmp_path / "m.h5", "--algo", "smoothboost", "--valid", sets / "valid.h5", *TREES)
    rec = m.info["noise_check"]
    assert rec["rows"] == "the validation rows" and rec["held_out"] == 1500
    arrays = read_arrays(sets / "valid.h5")
    X, y = arrays["X"], arrays["y"]
    wrong = {}
    for key, algo in (("algorithm", ("--algo", "smoothboost", "--noise-check", "off")), ("adaboost", ("--algo", "adaboost"))):
        twin = _train(sets / "noisy.h5", tmp_path / f"{key}.h5", *algo, *TREES)
        wrong[key] = twin.predict(X) != y
        assert rec["tried"][key]["errors"] == int(wrong[key].sum()), key
    assert rec["tried"]["adaboost"]["differ"] == int((wrong["algorithm"] != wrong["adaboost"]).sum())
    assert rec["chosen"] == rederive(rec)


def test_runs_without_a_check(sets, tmp_path):
    small = _train(sets / "small.h5", tmp_path / "s.h5", "--algo", "smoothboost", *TREES)
    assert small.algorithm == "smoothboost" and "fewer than" in small.info["noise_check"]["rule"]
    auto = _train(sets / "clean.h5", tmp_path / "a.h5", "--algo", "smoothboost", "--epsilon", "auto",
                  "--valid-fraction", "0.2", *TREES)
    assert auto.algorithm == "smoothboost" and "auto" in auto.info["noise_check"]["rule"]
    proc = run_cli(["train", "--data", str(sets / "clean.h5"), "--model", str(tmp_path / "x.h5"), "--algo",
                    "smoothboost", "--noise-check", "maybe", "--rounds", "5"])
    assert proc.returncode == 2 and "--noise-check" in proc.stderr


def test_resume_trains_the_choice_on(sets, tmp_path):
    ckpt = tmp_path / "c.h5"
    base = ("--algo", "smoothboost", "--weak-learner", "tree", "--max-leaves", "8", "--seed", "3", "--gamma", "0.1",
            "--checkpoint", ckpt)  # gamma given: its default follows --rounds
    _train(sets / "clean.h5", tmp_path / "part.h5", *base, "--rounds", "15")
    assert Model.load(ckpt).info["noise_check"]["chosen"] == "adaboost"
    resumed = _train(sets / "clean.h5", tmp_path / "res.h5", *base, "--rounds", "30", "--resume")
    straight = _train(sets / "clean.h5", tmp_path / "str.h5", *base[:-2], "--rounds", "30")
    assert _core(resumed) == _core(straight)
    # the choice is the checkpoint's (made at 15 rounds), as a resumed run keeps its checkpoint's gamma
    assert resumed.info["noise_check"] == Model.load(ckpt).info["noise_check"]
    proc = run_cli(["train", "--data", str(sets / "clean.h5"), "--model", str(tmp_path / "x.h5"), "--quiet",
                    *map(str, base), "--rounds", "30", "--resume", "--noise-check", "off"])
    assert proc.returncode == 2 and "--noise-check off" in proc.stderr, proc.stderr


@pytest.mark.mpi
@pytest.mark.skipif(mpiexec() is None, reason="no mpiexec")
def test_same_choice_and_model_on_1_to_4_ranks(sets, tmp_path):
    for name in ("clean", "noisy"):
        models = {n: _train(sets / f"{name}.h5", tmp_path / f"{name}{n}.h5", "--algo", "smoothboost", *TREES, n=n)
                  for n in (1, 2, 3, 4)}
        for n, m in models.items():
            assert _core(m) == _core(models[1]), (name, n)
            assert m.info["noise_check"] == models[1].info["noise_check"], (name, n)


def test_a_crafted_checkpoint_record_is_refused(sets, tmp_path):
    """A checkpoint whose noise-check record is not one mpiboost wrote: exit 2 naming it, not a traceback."""
    import h5py
    import json

    ckpt = tmp_path / "c.h5"
    base = ["train", "--algo", "smoothboost", "--data", str(sets / "clean.h5"), "--quiet", "--threads", "1", *TREES[:4],
            "--seed", "3", "--gamma", "0.1", "--checkpoint", str(ckpt)]
    assert run_cli([*base, "--model", str(tmp_path / "p.h5"), "--rounds", "5"]).returncode == 0
    with h5py.File(ckpt, "r+") as f:
        key = next(k for k in f.attrs if "noise_check" in str(f.attrs[k]))
        doc = json.loads(f.attrs[key])
        info = doc if "noise_check" in doc else doc["info"]
        info["noise_check"]["tried"] = {}
        f.attrs[key] = json.dumps(doc)
    proc = run_cli([*base, "--model", str(tmp_path / "r.h5"), "--rounds", "10", "--resume"])
    assert proc.returncode == 2 and "noise_check record" in proc.stderr, proc.stderr[-2000:]


def test_the_check_prints_a_line_per_training(sets, tmp_path):
    """Not a silent phase: outside a terminal each of its two trainings is a line (what, rounds, seconds,
    ETA), and the summary line counts its seconds."""
    proc = run_cli(["train", "--data", str(sets / "clean.h5"), "--model", str(tmp_path / "m.h5"), "--algo",
                    "smoothboost", "--rounds", "15", "--threads", "1"], timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "noise check 1/2 (SmoothBoost): 15 rounds in " in proc.stderr, proc.stderr
    assert "noise check 2/2 (AdaBoost): " in proc.stderr and "selection " in proc.stdout


def test_validation_weights_weigh_each_rows_error(sets, tmp_path):
    """Validation rows with sample weights: the gain and its standard error are by the weights, against numpy
    (np.average of the paired differences of the two models trained by hand)."""
    from mpiboost.data.format import write_dataset

    arrays = read_arrays(sets / "valid.h5")
    X, y = arrays["X"], arrays["y"]
    w = np.random.default_rng(5).choice([0.25, 1.0, 3.0], size=y.size)
    write_dataset(tmp_path / "vw.h5", X, y, weight=w)
    m = _train(sets / "noisy.h5", tmp_path / "m.h5", "--algo", "smoothboost", "--valid", tmp_path / "vw.h5", *TREES)
    ada = m.info["noise_check"]["tried"]["adaboost"]
    wrong = {}
    for key, algo in (("algorithm", ("--algo", "smoothboost", "--noise-check", "off")), ("adaboost", ("--algo", "adaboost"))):
        twin = _train(sets / "noisy.h5", tmp_path / f"{key}.h5", *algo, *TREES)
        wrong[key] = (twin.predict(X) != y).astype(float)
    d = wrong["algorithm"] - wrong["adaboost"]
    gain = np.average(d, weights=w)
    assert ada["gain"] == pytest.approx(gain, rel=1e-12, abs=1e-15)
    assert ada["se"] == pytest.approx(np.sqrt(np.sum(w ** 2 * (d - gain) ** 2)) / w.sum(), rel=1e-9)
    assert ada["weighted_errors"] == pytest.approx(float(w @ wrong["adaboost"]), rel=1e-12)
    assert m.info["noise_check"]["chosen"] == ("adaboost" if gain > 0 and gain > ada["se"] else "algorithm")


def test_auc_runs_compare_auc(sets, tmp_path):
    """``--valid-metric auc``: the check compares the two models' held-out AUCs (weighted where the rows have
    weights), each against scikit-learn's ``roc_auc_score`` of the two models trained by hand, and switches to
    AdaBoost only when its AUC is higher by more than one standard error of the difference."""
    from sklearn.metrics import roc_auc_score

    from mpiboost.data.format import write_dataset

    arrays = read_arrays(sets / "valid.h5")
    X, y = arrays["X"], arrays["y"]
    w = np.random.default_rng(7).choice([0.5, 1.0, 2.0], size=y.size)
    write_dataset(tmp_path / "vw.h5", X, y, weight=w)
    for name, weights in (("clean", None), ("noisy", w)):
        valid = sets / "valid.h5" if weights is None else tmp_path / "vw.h5"
        m = _train(sets / f"{name}.h5", tmp_path / f"{name}.h5", "--algo", "smoothboost", "--valid", valid,
                   "--valid-metric", "auc", *TREES)
        rec = m.info["noise_check"]
        assert rec["metric"] == "auc" and "AUC" in rec["rule"], rec
        auc = {}
        for key, algo in (("algorithm", ("--algo", "smoothboost", "--noise-check", "off")),
                          ("adaboost", ("--algo", "adaboost"))):
            twin = _train(sets / f"{name}.h5", tmp_path / f"{name}-{key}.h5", *algo, *TREES)
            auc[key] = roc_auc_score(y, twin.decision_function(X), sample_weight=weights)
            assert rec["tried"][key]["auc"] == pytest.approx(auc[key], rel=1e-12), (name, key)
            assert rec["tried"][key]["errors"] == int((twin.predict(X) != y).sum()), (name, key)
        ada = rec["tried"]["adaboost"]
        assert ada["auc_gain"] == ada["gain"] == pytest.approx(auc["adaboost"] - auc["algorithm"], abs=1e-12)
        assert ada["se"] > 0
        assert rec["chosen"] == ("adaboost" if ada["gain"] > 0 and ada["gain"] > ada["se"] else "algorithm"), rec
        assert m.algorithm == ("adaboost" if rec["chosen"] == "adaboost" else "smoothboost")


def test_flipped_labels_move_every_models_auc_alike():
    """The rule's premise under ``--valid-metric auc``: with labels flipped at rates eta+ and eta- (different by
    class), each model's expected AUC on the noisy rows is ``c + (a - b) AUC_clean`` with the same ``c`` and
    ``a - b > 0`` for every model, so the model with the higher noisy AUC is the one with the higher clean AUC.
    The expectation is exact: every row counted in both classes with the probabilities of its noisy label."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(11)
    y = rng.random(600) < 0.3
    pi = y.mean()
    for eta_pos, eta_neg in ((0.1, 0.1), (0.3, 0.05), (0.0, 0.4)):
        a = (1 - eta_pos) * pi / ((1 - eta_pos) * pi + eta_neg * (1 - pi))  # clean positives among noisy positives
        b = eta_pos * pi / (eta_pos * pi + (1 - eta_neg) * (1 - pi))  # clean positives among noisy negatives
        lines = []
        for _ in range(4):
            s = np.round(rng.normal(size=y.size) + rng.uniform(0, 2) * y, 1)  # ties too
            clean = roc_auc_score(y, s)
            p_pos = np.where(y, 1 - eta_pos, eta_neg)  # the chance each row's noisy label is positive
            noisy = roc_auc_score(np.r_[np.ones(y.size), np.zeros(y.size)], np.r_[s, s],
                                  sample_weight=np.r_[p_pos, 1 - p_pos])
            lines.append((clean, noisy))
        clean, noisy = map(np.array, zip(*lines))
        slope = np.diff(noisy) / np.diff(clean)
        assert np.allclose(slope, a - b, rtol=1e-9) and a - b > 0, (eta_pos, eta_neg, slope, a - b)
        assert np.allclose(noisy - (a - b) * clean, noisy[0] - (a - b) * clean[0], atol=1e-12)
