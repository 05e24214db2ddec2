"""The baseline guard (``--baseline-guard holdout``, the default with validation rows): MultiBoost,
FedMultiBoost and IS multi-task boosting are kept only where they validate at least as well as their
simplest baselines (every row pooled; each task alone).

Checked here: a baseline that validates better replaces the algorithm, and one that does not leaves it;
every choice re-derived from the counts it records; the counts against a naive twin (each candidate trained
by hand and scored on the validation rows); DeLong's paired AUC difference against a plain double loop and
scikit-learn's AUC; the same choice and model on 1 to 4 ranks; resuming; the runs that make no guard.
"""
from __future__ import annotations

import h5py
import numpy as np
import pytest

from mpi_util import mpiexec, run_cli
from mpiboost.data.format import read_arrays, write_dataset
from mpiboost.driver.selection.paired import auc_difference
from mpiboost.model import Model

VALID = ("--valid-fraction", "0.25", "--seed", "2")
# the order the algorithms declare their baselines in (a tie goes to the first)
BASELINE_ORDER = ["algorithm", "pooled", "pooled-id", "per-domain", "per-task"]


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Three domains of a shared rule with shifts (MultiBoost's), and six tasks of which three label
    against the other three (IS multi-task's Dataset 2)."""
    work = tmp_path_factory.mktemp("guard")
    for args in (["multisource", "--n", "3000", "--seed", "1", "--out", str(work / "ms.h5")],
                 ["multitask", "--n", "1200", "--dataset", "2", "--seed", "1", "--out", str(work / "mt.h5")]):
        proc = run_cli(["synth", *args])
        assert proc.returncode == 0, proc.stderr
    a = read_arrays(work / "ms.h5")  # the same rows with sample weights
    write_dataset(work / "msw.h5", a["X"], a["y"], a["domain"], weight=np.random.default_rng(3).choice(
        [0.5, 1.0, 4.0], size=a["y"].size), domain_names=["domain1", "domain2", "domain3"])
    return work


def _train(data, model, *extra, n=0, ok=True):
    proc = run_cli(["train", "--data", str(data), "--model", str(model), "--quiet", "--threads", "1",
                    *map(str, extra)], n=n, timeout=300)
    if ok:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        return Model.load(model), proc
    return None, proc


def rederive(rec: dict) -> str:
    """The choice the rule makes from a record's error counts, apart from mpiboost: each baseline's paired
    differences against the algorithm rebuilt as +1, -1 and 0, their mean and standard error by numpy; the
    candidate of fewest errors is the model (of equal counts, the algorithm, then the one declared first)."""
    n, t = rec["held_out"], rec["tried"]
    for k in sorted(t, key=BASELINE_ORDER.index):  # the record's keys are sorted by name
        v = t[k]
        if k == "algorithm":
            continue
        total = t["algorithm"]["errors"] - v["errors"]
        d = np.array([1] * ((v["differ"] + total) // 2) + [-1] * ((v["differ"] - total) // 2) + [0] * (n - v["differ"]))
        assert d.size == n
        gain, se = d.mean(), d.std(ddof=1) / np.sqrt(n)
        assert np.isclose(v["gain"], gain, rtol=1e-12, atol=0) and np.isclose(v["se"], se, rtol=1e-12, atol=1e-15)
    return min(t, key=lambda k: (t[k]["errors"], BASELINE_ORDER.index(k)))


def test_a_baseline_that_validates_better_is_the_model(sets, tmp_path):
    """Six tasks, three labelled against the others: pulling each task toward the others (lambda 5 from a zero
    start) errs far more than each task alone, and logistic trees on every row that may split on the task (a
    task id column) err least; the guard keeps them, bit for bit the baseline trained alone."""
    m, proc = _train(sets / "mt.h5", tmp_path / "m.h5", "--algo", "is-multitask", "--rounds", "60", "--lambda", "5",
                     "--start", "zero", *VALID)
    rec = m.info["baseline_guard"]
    assert rec["chosen"] == "pooled" == rederive(rec), rec
    assert m.params["refine"] == "off" and m.params["start"] == "logistic" and m.params["baseline_guard"] == "off"
    assert m.params["start_rounds"] == 100  # LightGBM's 100 trees, cut at the lowest validation log-loss
    assert rec["tried"]["algorithm"]["errors"] > rec["tried"]["per-task"]["errors"] > rec["tried"]["pooled"]["errors"]
    assert "baseline guard: the model is pooled" in proc.stdout
    # the model is the pooled baseline trained as the run asked, bit for bit: trees, some split on a task
    alone, _ = _train(sets / "mt.h5", tmp_path / "a.h5", "--algo", "is-multitask", "--rounds", "60", "--refine", "off",
                      "--baseline-guard", "off", *VALID)
    assert m.n_stumps > 0 and m.has_trees and np.any(m.domain >= 0)
    assert (m.feature.tolist(), m.coef.tolist(), m.domain.tolist()) == \
        (alone.feature.tolist(), alone.coef.tolist(), alone.domain.tolist())
    assert [t.to_dict() if hasattr(t, "to_dict") else repr(t) for t in m.trees] == \
        [t.to_dict() if hasattr(t, "to_dict") else repr(t) for t in alone.trees]


DOMAIN_FREE = ("--baseline-guard", "domain-free")


def test_multiboost_stays_where_it_validates_better_and_yields_where_it_does_not(sets, tmp_path):
    # domain-free: the pooled baseline alone (the model per domain is the next test's)
    good, _ = _train(sets / "ms.h5", tmp_path / "g.h5", "--algo", "multiboost", "--rounds", "40", *DOMAIN_FREE,
                     *VALID)
    rec = good.info["baseline_guard"]
    assert rec["chosen"] == "algorithm" == rederive(rec) and good.algorithm == "multiboost", rec
    assert set(rec["tried"]) == {"algorithm", "pooled"}
    # a step so small that 40 rounds leave it far from the rule: AdaBoost pooled validates better
    weak, _ = _train(sets / "ms.h5", tmp_path / "w.h5", "--algo", "multiboost", "--rounds", "40",
                     "--learning-rate", "0.001", *DOMAIN_FREE, *VALID)
    rec = weak.info["baseline_guard"]
    assert rec["chosen"] == "pooled" == rederive(rec) and weak.algorithm == "adaboost", rec
    # pooled ahead by less than one standard error of the paired differences: still the better model, kept (the
    # candidates stand level; no incumbent keeps its place by a standard error)
    close, _ = _train(sets / "ms.h5", tmp_path / "c.h5", "--algo", "multiboost", "--rounds", "20",
                      "--learning-rate", "0.05", *DOMAIN_FREE, *VALID)
    rec = close.info["baseline_guard"]
    pooled = rec["tried"]["pooled"]
    assert pooled["errors"] < rec["tried"]["algorithm"]["errors"] and 0 < pooled["gain"] <= pooled["se"], rec
    assert rec["chosen"] == "pooled" == rederive(rec) and close.algorithm == "adaboost", rec
    fed, _ = _train(sets / "ms.h5", tmp_path / "f.h5", "--algo", "fedmultiboost", "--rounds", "20", *VALID)
    assert fed.info["baseline_guard"]["chosen"] == rederive(fed.info["baseline_guard"])


def test_a_model_per_domain_where_the_domains_differ(sets, tmp_path):
    """Three domains of shifted rules: a model per domain (AdaBoost trees on each domain alone) validates far
    better than MultiBoost's one model and pooling, and is the model, bit for bit the baseline trained alone;
    it scores a row with its domain."""
    m, proc = _train(sets / "ms.h5", tmp_path / "m.h5", "--algo", "multiboost", "--rounds", "40", *VALID)
    rec = m.info["baseline_guard"]
    assert rec["chosen"] == "per-domain" == rederive(rec), rec
    assert rec["tried"]["per-domain"]["errors"] < min(rec["tried"]["pooled"]["errors"],
                                                      rec["tried"]["algorithm"]["errors"])
    assert m.algorithm == "is-multitask" and m.takes_task and m.params["lam"] == 0.0 and m.has_trees
    assert "baseline guard: the model is per-domain" in proc.stdout
    alone, _ = _train(sets / "ms.h5", tmp_path / "a.h5", "--algo", "is-multitask", "--rounds", "40", "--lambda", "0",
                      "--start", "zero", "--weak-learner", "tree", "--baseline-guard", "off", *VALID)
    assert alone.params["learning_rate"] == m.params["learning_rate"] < 1  # trees: min(1, 1.5 / sqrt(T / J))
    assert (m.feature.tolist(), m.coef.tolist(), m.domain.tolist()) == \
        (alone.feature.tolist(), alone.coef.tolist(), alone.domain.tolist())
    arrays = read_arrays(sets / "ms.h5")
    out = tmp_path / "p.npy"
    pred = run_cli(["predict", "--model", str(tmp_path / "m.h5"), "--data", str(sets / "ms.h5"), "--out", str(out)])
    assert pred.returncode == 0, pred.stderr
    want = np.where(alone.decision_function(arrays["X"], arrays["domain"]) >= 0, 1, -1)
    assert np.array_equal(np.load(out).astype(int), want)
    # rows without their domain cannot be scored by a model per domain: refused, naming the file
    write_dataset(tmp_path / "nod.h5", arrays["X"][:50], arrays["y"][:50])
    pred = run_cli(["predict", "--model", str(tmp_path / "m.h5"), "--data", str(tmp_path / "nod.h5"), "--out",
                    str(tmp_path / "q.npy")])
    assert pred.returncode == 2 and "nod.h5" in pred.stderr and "no 'domain' column" in pred.stderr, pred.stderr
    assert not (tmp_path / "q.npy").exists()


def test_logistic_trees_that_split_on_the_domain_where_the_domains_conflict(sets, tmp_path):
    """Six tasks, three labelled against the others: no model without the domain does well, and trees that
    may split on the domain (a domain id column, LightGBM's way) share what the tasks have in common and
    validate best; the model is that baseline trained alone, bit for bit."""
    m, _ = _train(sets / "mt.h5", tmp_path / "m.h5", "--algo", "multiboost", "--rounds", "40", *VALID)
    rec = m.info["baseline_guard"]
    assert rec["chosen"] == "pooled-id" == rederive(rec), rec
    assert rec["tried"]["pooled-id"]["errors"] < rec["tried"]["per-domain"]["errors"] < \
        min(rec["tried"]["pooled"]["errors"], rec["tried"]["algorithm"]["errors"])
    alone, _ = _train(sets / "mt.h5", tmp_path / "a.h5", "--algo", "is-multitask", "--refine", "off", "--rounds",
                      "40", "--baseline-guard", "off", *VALID)
    assert m.params["refine"] == "off" and m.takes_task and np.any(m.domain >= 0)
    assert (m.feature.tolist(), m.coef.tolist(), m.domain.tolist()) == \
        (alone.feature.tolist(), alone.coef.tolist(), alone.domain.tolist())


def test_counts_match_a_naive_twin(sets, tmp_path):
    """Each candidate trained by hand on the same training rows and scored on the same validation rows."""
    m, _ = _train(sets / "mt.h5", tmp_path / "m.h5", "--algo", "is-multitask", "--rounds", "30", "--valid",
                  sets / "mt.h5")
    rec = m.info["baseline_guard"]
    arrays = read_arrays(sets / "mt.h5")
    X, y, task = arrays["X"], arrays["y"], arrays["domain"]
    off = ("--baseline-guard", "off")
    runs = {"algorithm": ("--algo", "is-multitask", *off), "pooled": ("--algo", "is-multitask", "--refine", "off", *off),
            "per-task": ("--algo", "is-multitask", "--lambda", "0", "--start", "zero", *off)}
    wrong = {}
    for key, algo in runs.items():
        twin, _ = _train(sets / "mt.h5", tmp_path / f"{key}.h5", *algo, "--rounds", "30")
        score = twin.decision_function(X, task) if twin.takes_task else twin.decision_function(X)
        wrong[key] = np.where(score >= 0, 1, 0) != (y > 0)
        assert rec["tried"][key]["errors"] == int(wrong[key].sum()), key
    for key in ("pooled", "per-task"):
        assert rec["tried"][key]["differ"] == int((wrong[key] != wrong["algorithm"]).sum())
    for a in runs:
        for b in runs:
            if a != b:
                assert rec["tried"][a]["differ_from"][b] == int((wrong[a] != wrong[b]).sum()), (a, b)
    assert rec["chosen"] == rederive(rec)


def _halves_by_hand(y, task, seed):
    """The stratified halves of the validation rows, written out: within each (task, class) group, in file
    order, row k is in the first half when floor((k + 1) / 2 + u) > floor(k / 2 + u), u drawn per group."""
    group = task.astype(np.int64) * 2 + (y > 0)
    first = np.zeros(y.size, dtype=bool)
    for g in range(int(task.max() + 1) * 2):
        rows = np.flatnonzero(group == g)
        u = np.random.default_rng([seed, 0x5E1EC7, g]).random()
        k = np.arange(rows.size)
        first[rows] = np.floor((k + 1) * 0.5 + u) > np.floor(k * 0.5 + u)
    return first


def _cross_fit_twin(data, valid, key, algo, first, tmp_path, per_half, cut=True):
    """One candidate's cross-fitted validation errors and rounds, by hand.

    ``per_half`` False: the candidate trained alone for every round, its validation curve on each half by
    numpy (the mean over the tasks' errors for a task model, as the run's own), the earliest best round of
    each, and each half's errors at the other's round. ``per_half`` True (a candidate that shapes itself on
    its validation rows): trained twice with ``--valid`` one half and ``--best-round``, each half scored by
    the run that did not see it. ``cut`` False (no ``--best-round``): every round kept, none chosen."""
    a = read_arrays(valid)
    X, y, task = a["X"], a["y"], a["domain"]
    if per_half:
        got = []
        for h, rows in enumerate((first, ~first)):
            path = tmp_path / f"{key}-half{h}.h5"
            write_dataset(path, X[rows], y[rows], task[rows], domain_names=a.get("domain_names"))
            twin, proc = _train(data, tmp_path / f"{key}{h}.h5", *algo, "--valid", path,
                                *(("--best-round",) if cut else ()))
            got.append((twin, twin.n_rounds))
        wrong = np.where(first, got[1][0].predict(X, task) != y, got[0][0].predict(X, task) != y)
        return wrong, [int(got[0][1]), int(got[1][1])] if cut else None
    twin, _ = _train(data, tmp_path / f"{key}.h5", *algo)
    rounds = int(twin.n_rounds)

    def wrong_at(r):
        t = twin.truncated(r) if 0 < r < rounds else twin
        return np.where(t.decision_function(X, task) >= 0, 1, -1) != y

    if not cut:
        return wrong_at(rounds), None
    staged = [wrong_at(r) for r in range(1, rounds + 1)]
    best = []
    for half in (first, ~first):
        curve = [np.mean([w[half & (task == k)].mean() for k in np.unique(task[half])]) for w in staged]
        best.append(int(np.argmin(curve)) + 1 if curve else 0)
    return np.where(first, wrong_at(best[1]), wrong_at(best[0])), best


@pytest.mark.parametrize("algorithm,cut", [("is-multitask", True), ("multiboost", True), ("multiboost", False)])
def test_each_half_is_scored_by_what_the_other_half_chose(sets, tmp_path, algorithm, cut):
    """With --best-round each candidate's round is chosen on the same validation rows the guard scores it
    on, a bias toward candidates of jagged curves; the guard scores each half of the rows at the round chosen
    on the other half, and trains a candidate that makes choices of its own on validation rows (IS
    multi-task's start forest and per-task fits: every candidate of is-multitask, MultiBoost's pooled-id and
    per-domain) once per half, each half scored by the run that did not see it, with or without a cut at the
    best round (``cut``). Twin: each candidate trained by hand (:func:`_cross_fit_twin`)."""
    valid = tmp_path / "valid.h5"
    if algorithm == "is-multitask":
        data, synth = sets / "mt.h5", ["multitask", "--n", "1200", "--dataset", "2", "--seed", "5"]
        runs = {"algorithm": ("--algo", "is-multitask"), "pooled": ("--algo", "is-multitask", "--refine", "off"),
                "per-task": ("--algo", "is-multitask", "--lambda", "0", "--start", "zero")}
        shaped = set(runs)
    else:
        # three tasks that share nothing: pooled-id's forest is cut early on its validation log-loss, where
        # half the rows cut it elsewhere than all of them (307 errors, against 309 scored on the rows that cut it)
        many = ["manytasks", "--tasks", "3", "--shared", "0", "--interaction", "0", "--positive-rate", "0.3",
                "--task-seed", "0"]
        data, synth = tmp_path / "tr.h5", [*many, "--n", "600", "--seed", "5"]
        assert run_cli(["synth", *many, "--n", "1500", "--seed", "1", "--out", str(data)]).returncode == 0
        runs = {"algorithm": ("--algo", "multiboost"),
                "pooled": ("--algo", "adaboost", "--weak-learner", "tree", "--loss", "logistic"),
                "pooled-id": ("--algo", "is-multitask", "--refine", "off"),
                "per-domain": ("--algo", "is-multitask", "--lambda", "0", "--start", "zero", "--weak-learner",
                               "tree")}
        shaped = {"pooled-id", "per-domain"}
    assert run_cli(["synth", *synth, "--out", str(valid)]).returncode == 0
    m, _ = _train(data, tmp_path / "m.h5", "--algo", algorithm, "--rounds", "30", "--valid", valid,
                  *(("--best-round",) if cut else ()), "--seed", "4")
    rec = m.info["baseline_guard"]
    assert set(rec["tried"]) == set(runs), rec
    a = read_arrays(valid)
    first = _halves_by_hand(a["y"], a["domain"], 4 + 1)
    wrong = {}
    for key, algo in runs.items():
        off = () if "adaboost" in algo else ("--baseline-guard", "off")
        wrong[key], rounds = _cross_fit_twin(data, valid, key, (*algo, *off, "--seed", "4", "--rounds", "30"), first,
                                             tmp_path, key in shaped, cut)
        assert rec["tried"][key].get("rounds") == rounds, key
        assert rec["tried"][key]["errors"] == int(wrong[key].sum()), key
    if algorithm == "is-multitask":
        assert rec["tried"]["per-task"]["rounds"][0] != rec["tried"]["per-task"]["rounds"][1]  # the halves disagree
    assert "trained once per half" in rec["rule"]
    for key in runs:
        if key != "algorithm":
            assert rec["tried"][key]["differ"] == int((wrong[key] != wrong["algorithm"]).sum())
    assert rec["chosen"] == rederive(rec)


def _pairs(y, task):
    """Each task's (or the rows') positives and negatives, by index (None where a class is missing)."""
    for k in (np.unique(task) if task is not None else [None]):
        g = np.ones(y.size, bool) if k is None else task == k
        pos, neg = np.flatnonzero(g & (y > 0)), np.flatnonzero(g & (y <= 0))
        yield (pos, neg) if pos.size and neg.size else (None, None)


def _psi(s, i, j):
    return 1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0


def _delong_by_loops(y, task, a, b):
    """DeLong's difference and standard error written out: every positive against every negative."""
    diffs, var = [], 0.0
    for pos, neg in _pairs(y, task):
        if pos is None:
            diffs.append(0.0)
            continue
        v10 = np.array([[np.mean([_psi(s, i, j) for j in neg]) for i in pos] for s in (a, b)])
        v01 = np.array([[np.mean([_psi(s, i, j) for i in pos]) for j in neg] for s in (a, b)])
        diffs.append(v10[1].mean() - v10[0].mean())
        s10, s01 = np.cov(v10), np.cov(v01)
        var += (s10[0, 0] + s10[1, 1] - 2 * s10[0, 1]) / pos.size + (s01[0, 0] + s01[1, 1] - 2 * s01[0, 1]) / neg.size
    return float(np.mean(diffs)), float(np.sqrt(var)) / len(diffs)


@pytest.mark.parametrize("case", range(6))
def test_the_paired_auc_difference_is_delongs(case):
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(case)
    n = 60 + 20 * case
    y = np.where(rng.random(n) < (0.5 if case % 2 else 0.15), 1, -1)
    task = rng.integers(0, 3, n) if case >= 3 else None
    a = y * 0.5 + rng.normal(size=n)
    b = np.round(y * 0.8 + rng.normal(size=n), 1)  # ties within and across the classes
    if case == 5:
        b = a.copy()  # the same scores: no difference, no spread
    got = auc_difference(y, task, a, b)
    want = _delong_by_loops(y, task, a, b)
    assert np.allclose(got, want, rtol=1e-10, atol=1e-12), (got, want)
    if task is None:
        assert np.isclose(got[0], roc_auc_score(y > 0, b) - roc_auc_score(y > 0, a), rtol=0, atol=1e-12)


def _weighted_auc_difference_by_loops(y, task, a, b, w):
    """The weighted AUC difference and its standard error written out: every positive against every
    negative, each pair counting the product of their weights; the variance the sandwich sum over the rows of
    their squared weights times their paired components' deviation."""
    diffs, var = [], 0.0
    for pos, neg in _pairs(y, task):
        if pos is None:
            diffs.append(0.0)
            continue
        psi = _psi
        W1, W0 = w[pos].sum(), w[neg].sum()
        v10 = np.array([[sum(w[j] * psi(s, i, j) for j in neg) / W0 for i in pos] for s in (a, b)])
        v01 = np.array([[sum(w[i] * psi(s, i, j) for i in pos) / W1 for j in neg] for s in (a, b)])
        d = sum(w[i] * (v10[1, n] - v10[0, n]) for n, i in enumerate(pos)) / W1
        diffs.append(d)
        var += sum(w[i] ** 2 * (v10[1, n] - v10[0, n] - d) ** 2 for n, i in enumerate(pos)) / W1 ** 2
        var += sum(w[j] ** 2 * (v01[1, n] - v01[0, n] - d) ** 2 for n, j in enumerate(neg)) / W0 ** 2
    return float(np.mean(diffs)), float(np.sqrt(var)) / len(diffs)


@pytest.mark.parametrize("case", range(6))
def test_the_weighted_paired_auc_difference(case):
    """With sample weights: the weighted AUCs (sklearn's roc_auc_score with sample_weight) and the weighted
    form of DeLong's variance, against a double loop; with equal weights, DeLong's difference, and its variance
    but for the factors (m - 1) / m and (n - 1) / n."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(10 + case)
    n = 50 + 15 * case
    y = np.where(rng.random(n) < (0.5 if case % 2 else 0.2), 1, -1)
    task = rng.integers(0, 3, n) if case >= 3 else None
    a = y * 0.5 + rng.normal(size=n)
    b = np.round(y * 0.8 + rng.normal(size=n), 1)  # ties within and across the classes
    w = rng.choice([0.25, 1.0, 3.0], size=n) if case != 2 else rng.exponential(size=n)
    got = auc_difference(y, task, a, b, w)
    want = _weighted_auc_difference_by_loops(y, task, a, b, w)
    assert np.allclose(got, want, rtol=1e-10, atol=1e-12), (got, want)
    if task is None:
        assert np.isclose(got[0], roc_auc_score(y > 0, b, sample_weight=w) - roc_auc_score(y > 0, a, sample_weight=w),
                          rtol=0, atol=1e-12)
        ones = auc_difference(y, None, a, b, np.ones(n))
        plain = auc_difference(y, None, a, b)
        m, k = int((y > 0).sum()), int((y <= 0).sum())
        assert np.isclose(ones[0], plain[0], rtol=0, atol=1e-12)
        assert ones[1] <= plain[1] and ones[1] >= plain[1] * np.sqrt(min(m - 1, k - 1) / max(m, k)) - 1e-12


def test_runs_without_a_guard(sets, tmp_path):
    plain, _ = _train(sets / "ms.h5", tmp_path / "p.h5", "--algo", "multiboost", "--rounds", "10")
    assert plain.info["baseline_guard"] == {"chosen": "algorithm",
                                            "rule": "no validation rows (--valid or --valid-fraction): no guard"}
    off, _ = _train(sets / "ms.h5", tmp_path / "o.h5", "--algo", "multiboost", "--rounds", "10",
                    "--learning-rate", "0.001", "--baseline-guard", "off", *VALID)
    assert off.algorithm == "multiboost" and "--baseline-guard off" in off.info["baseline_guard"]["rule"]
    paper, _ = _train(sets / "ms.h5", tmp_path / "q.h5", "--algo", "multiboost", "--rounds", "10", "--preset",
                      "paper", *VALID)
    assert "--baseline-guard off" in paper.info["baseline_guard"]["rule"]


def test_resume_trains_the_choice_on(sets, tmp_path):
    ckpt = tmp_path / "c.h5"
    base = ("--algo", "multiboost", "--learning-rate", "0.001", *DOMAIN_FREE, *VALID, "--checkpoint", ckpt)
    _train(sets / "ms.h5", tmp_path / "part.h5", *base, "--rounds", "15")
    assert Model.load(ckpt).info["baseline_guard"]["chosen"] == "pooled"
    resumed, _ = _train(sets / "ms.h5", tmp_path / "res.h5", *base, "--rounds", "30", "--resume")
    straight, _ = _train(sets / "ms.h5", tmp_path / "str.h5", *base[:-2], "--rounds", "30")
    assert resumed.to_json() == straight.to_json().replace(str(tmp_path / "str.h5"), str(tmp_path / "res.h5")) \
        or (resumed.coef.tolist(), resumed.feature.tolist()) == (straight.coef.tolist(), straight.feature.tolist())
    _, proc = _train(sets / "ms.h5", tmp_path / "x.h5", *base, "--rounds", "30", "--resume", "--baseline-guard", "off",
                     ok=False)
    assert proc.returncode == 2 and "--baseline-guard off" in proc.stderr, proc.stderr


@pytest.mark.mpi
@pytest.mark.skipif(mpiexec() is None, reason="no mpiexec")
def test_same_choice_and_model_on_1_to_4_ranks(sets, tmp_path):
    # the last three cut each candidate at its best rounds, chosen on each half of the validation rows, and
    # compare by the rows' weights (AUC, errors, log-loss)
    for data, args in (("mt.h5", ("--algo", "is-multitask", "--rounds", "30", "--lambda", "5", "--start", "zero")),
                       ("msw.h5", ("--algo", "is-multitask", "--rounds", "30", "--valid-metric", "auc", "--best-round")),
                       ("msw.h5", ("--algo", "multiboost", "--rounds", "20", "--best-round")),  # weights, 3 baselines
                       ("msw.h5", ("--algo", "multiboost", "--rounds", "20", "--valid-metric", "logloss",
                                   "--best-round"))):
        models = {n: _train(sets / data, tmp_path / f"{n}.h5", *args, *VALID, n=n)[0] for n in (1, 2, 3, 4)}
        for n, m in models.items():
            assert m.info["baseline_guard"] == models[1].info["baseline_guard"], (args, n)
            assert (m.feature.tolist(), m.coef.tolist()) == (models[1].feature.tolist(), models[1].coef.tolist())


def test_sample_weights_weigh_each_rows_error(sets, tmp_path):
    """With sample weights the guard's gain and standard error are by the weights, against a numpy twin (each
    candidate trained by hand, scored on the validation rows, np.average of the paired differences); the
    counts are kept beside them."""
    data = sets / "msw.h5"
    arrays = read_arrays(data)
    X, y, dom = arrays["X"], arrays["y"], arrays["domain"]
    with h5py.File(data, "r") as f:
        w = f["weight"][:]
    m, _ = _train(data, tmp_path / "m.h5", "--algo", "multiboost", "--rounds", "20", "--valid", data)
    rec = m.info["baseline_guard"]
    assert rec["weighted"] and "by the rows' weights" in rec["rule"]
    runs = {"algorithm": ("--algo", "multiboost", "--baseline-guard", "off"),
            "pooled": ("--algo", "adaboost", "--weak-learner", "tree", "--loss", "logistic"),
            "pooled-id": ("--algo", "is-multitask", "--refine", "off", "--baseline-guard", "off"),
            "per-domain": ("--algo", "is-multitask", "--lambda", "0", "--start", "zero", "--weak-learner", "tree",
                           "--baseline-guard", "off")}
    wrong = {}
    for key, algo in runs.items():
        twin, _ = _train(data, tmp_path / f"{key}.h5", *algo, "--rounds", "20")
        score = twin.decision_function(X, dom) if twin.takes_task else twin.decision_function(X)
        wrong[key] = (np.where(score >= 0, 1, -1) != y).astype(float)
    assert rec["tried"]["algorithm"]["weighted_errors"] == pytest.approx(float(w @ wrong["algorithm"]), rel=1e-12)
    for key in ("pooled", "pooled-id", "per-domain"):
        t = rec["tried"][key]
        d = wrong["algorithm"] - wrong[key]
        gain = np.average(d, weights=w)
        se = np.sqrt(np.sum(w ** 2 * (d - gain) ** 2)) / w.sum()
        assert t["errors"] == int(wrong[key].sum()) and t["weighted_errors"] == pytest.approx(float(w @ wrong[key]))
        assert t["gain"] == pytest.approx(gain, rel=1e-12, abs=1e-15) and t["se"] == pytest.approx(se, rel=1e-9)
    # the model: the candidate of least weighted error (of equal ones, the algorithm, then the declared order)
    order = ["algorithm", "pooled", "pooled-id", "per-domain"]
    assert rec["chosen"] == min(order, key=lambda k: (float(w @ wrong[k]), order.index(k)))


def test_sample_weights_weigh_the_auc_comparison(sets, tmp_path):
    """With sample weights and --valid-metric auc the guard compares weighted AUCs (the mean over the domains,
    a model per domain being among the candidates), against each candidate trained by hand and the weighted
    difference computed apart."""
    data = sets / "msw.h5"
    arrays = read_arrays(data)
    X, y, dom = arrays["X"], arrays["y"], arrays["domain"]
    with h5py.File(data, "r") as f:
        w = f["weight"][:]
    m, _ = _train(data, tmp_path / "m.h5", "--algo", "multiboost", "--rounds", "20", "--valid", data,
                  "--valid-metric", "auc")
    rec = m.info["baseline_guard"]
    assert rec["metric"] == "auc" and rec["weighted"] and "(weighted)" in rec["rule"]
    runs = {"algorithm": ("--algo", "multiboost", "--baseline-guard", "off"),
            "pooled": ("--algo", "adaboost", "--weak-learner", "tree", "--loss", "logistic"),
            "per-domain": ("--algo", "is-multitask", "--lambda", "0", "--start", "zero", "--weak-learner", "tree",
                           "--baseline-guard", "off")}
    score = {}
    for key, algo in runs.items():
        twin, _ = _train(data, tmp_path / f"{key}.h5", *algo, "--rounds", "20", "--valid-metric", "auc")
        score[key] = twin.decision_function(X, dom) if twin.takes_task else twin.decision_function(X)
    for key in ("pooled", "per-domain"):
        want = _weighted_auc_difference_by_loops(y, dom, score["algorithm"], score[key], w) if y.size <= 400 else \
            auc_difference(y, dom, score["algorithm"], score[key], w)
        assert (rec["tried"][key]["auc_gain"], rec["tried"][key]["se"]) == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert rec["tried"][key]["auc_gain"] != pytest.approx(
            auc_difference(y, dom, score["algorithm"], score[key])[0], rel=1e-6, abs=1e-9)  # the weights count


def test_logloss_compares_each_rows_log_loss(sets, tmp_path):
    """With --valid-metric logloss the guard compares the candidates' per-row log-losses, each under its own
    link: against each candidate trained by hand, its probabilities by numpy (sigmoid(F) for a logistic link,
    sigmoid(2 F) for an exponential-loss vote), with sample weights the weighted paired mean and sandwich
    standard error, without them the plain mean and standard error."""
    runs = {"algorithm": ("--algo", "multiboost", "--baseline-guard", "off"),
            "pooled": ("--algo", "adaboost", "--weak-learner", "tree", "--loss", "logistic"),
            "pooled-id": ("--algo", "is-multitask", "--refine", "off", "--baseline-guard", "off"),
            "per-domain": ("--algo", "is-multitask", "--lambda", "0", "--start", "zero", "--weak-learner", "tree",
                           "--baseline-guard", "off")}
    for name in ("msw.h5", "ms.h5"):
        data = sets / name
        arrays = read_arrays(data)
        X, y, dom = arrays["X"], arrays["y"], arrays["domain"]
        with h5py.File(data, "r") as f:
            w = f["weight"][:] if "weight" in f else np.ones(y.size)
        loss = {}
        for key, algo in runs.items():
            twin, _ = _train(data, tmp_path / f"{key}.h5", *algo, "--rounds", "20")
            F = twin.decision_function(X, dom) if twin.takes_task else twin.decision_function(X)
            p = 1.0 / (1.0 + np.exp(-(1.0 if twin.link == "logistic" else 2.0) * F))
            loss[key] = -np.log(np.maximum(np.where(y > 0, p, 1.0 - p), 1e-15))
        assert len({float(v.mean()) for v in loss.values()}) == 4
        m, proc = _train(data, tmp_path / "m.h5", "--algo", "multiboost", "--rounds", "20", "--valid", data,
                         "--valid-metric", "logloss")
        rec = m.info["baseline_guard"]
        weighted = name == "msw.h5"
        assert rec["metric"] == "logloss" and rec["weighted"] == weighted
        assert "log-loss on" in proc.stdout, proc.stdout
        assert rec["tried"]["algorithm"]["loss"] == pytest.approx(np.average(loss["algorithm"], weights=w), rel=1e-9)
        for key in ("pooled", "pooled-id", "per-domain"):
            t = rec["tried"][key]
            d = loss["algorithm"] - loss[key]
            gain = np.average(d, weights=w)
            se = np.sqrt(np.sum(w ** 2 * (d - gain) ** 2)) / w.sum() if weighted else d.std(ddof=1) / np.sqrt(d.size)
            assert t["loss"] == pytest.approx(np.average(loss[key], weights=w), rel=1e-9)
            assert t["gain"] == pytest.approx(gain, rel=1e-9, abs=1e-12) and t["se"] == pytest.approx(se, rel=1e-9)
        # the model: the candidate of least mean log-loss (of equal ones, the algorithm, then the declared order)
        order = ["algorithm", "pooled", "pooled-id", "per-domain"]
        assert rec["chosen"] == min(order, key=lambda k: (float(np.average(loss[k], weights=w)), order.index(k))), \
            (name, rec)
